"""Make the demo dataset shipped in f5lite/demo_data/: synthetic English speech in six espeak-ng voices.

Each of the sentences below (written for this project) is read by two different voices, which gives 200 short
utterances. The audio is stored as Ogg Vorbis at 24 kHz (the rate training uses, so no resampling at load time),
under 4 MiB in all. The script then runs f5lite-prepare on the result, so the folder is a ready training
directory: cuts.jsonl.gz (a Lhotse CutSet, paths relative to it), vocab.txt, report.json. Only this script and
espeak-ng are needed to remake it; training on it needs neither. A remade file decodes to the same samples but
differs in bytes (each Ogg stream gets a random serial number), so only remake the dataset on purpose.

Usage: python scripts/make_demo_data.py [--out DIR]   (needs espeak-ng: apt-get install espeak-ng)
       python scripts/make_demo_data.py --prepare-only [--out DIR]   (only re-runs f5lite-prepare on the audio
       already there, e.g. after its output format changed; needs no espeak-ng and keeps the audio bytes)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.prepare import PrepareOptions, prepare
from f5lite.prepare.val_split import ValSplit

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "f5lite" / "demo_data"
VORBIS_LEVEL = 0.7  # soundfile's compression_level: 0 is the best quality, 1 the smallest file
TAIL_SECONDS = 0.1  # espeak-ng ends every utterance with about 0.3 s of silence; keep this much of it
SILENCE = 0.01  # amplitude under which a sample counts as silence
VAL_COUNT = 12  # utterances held out for the validation loss and the fixed prompts


@dataclass(frozen=True)
class Voice:
    speaker: str
    espeak_voice: str
    speed: int  # words per minute
    pitch: int  # 0 to 99


VOICES = (
    Voice("us_male", "en-us+m3", 165, 45),
    Voice("us_female", "en-us+f2", 170, 60),
    Voice("gb_male", "en-gb+m1", 160, 40),
    Voice("gb_female", "en-gb+f4", 175, 65),
    Voice("scottish_male", "en-gb-scotland+m4", 155, 35),
    Voice("caribbean_female", "en-029+f3", 165, 55),
)

SENTENCES = (
    "The kettle started to whistle just as the phone rang.",
    "Please leave your muddy boots by the back door.",
    "Our train was twenty minutes late this morning.",
    "She painted the fence a cheerful shade of yellow.",
    "Could you pass me the salt, please?",
    "The library closes early on Sundays.",
    "A small brown dog waited patiently outside the bakery.",
    "We watched the storm roll in from the hills.",
    "He forgot his umbrella again, of course.",
    "The soup needs a little more pepper.",
    "Turn left at the old oak tree, then keep going straight.",
    "My grandmother keeps her buttons in a tin box.",
    "The children built a castle out of cardboard.",
    "Is this the right bus for the city centre?",
    "The garden smells wonderful after the rain.",
    "I'll meet you at the corner at half past six.",
    "Nobody expected the quiz to be that difficult.",
    "The moon looked enormous above the harbour.",
    "Keep the receipt in case the shoes don't fit.",
    "They planted three apple trees along the path.",
    "What time does the concert start tonight?",
    "The printer ran out of paper in the middle of the report.",
    "A gentle breeze moved the curtains back and forth.",
    "He whistled a tune that nobody could name.",
    "The market sells fresh bread every Tuesday.",
    "Don't forget to water the tomatoes before you leave.",
    "The bridge was closed for repairs all summer.",
    "Her laugh could be heard from across the room.",
    "We counted seventeen boats in the bay.",
    "The recipe calls for two eggs and a cup of milk.",
    "Why is the kitchen light still on?",
    "The old clock in the hall stopped at midnight.",
    "Please speak a little louder, the room is noisy.",
    "A flock of geese flew over the frozen lake.",
    "The museum has a new exhibit about ancient maps.",
    "I think the blue jacket suits you better.",
    "The neighbours are having a party on Saturday.",
    "He read the letter twice before he believed it.",
    "The path through the forest is easy to follow.",
    "Would you like tea or coffee with your breakfast?",
    "The cat fell asleep on a pile of clean laundry.",
    "Snow covered the fields by the following morning.",
    "Our team finally won the match in the last minute.",
    "The lamp flickered and then went out completely.",
    "She keeps a notebook full of funny words.",
    "We should leave now if we want a good seat.",
    "The waves crashed against the rocks all night.",
    "How many stamps do I need for this parcel?",
    "The bakery on the square makes excellent pies.",
    "He fixed the squeaky door with a drop of oil.",
    "The sky turned pink and orange at sunset.",
    "Remember to bring a warm coat for the trip.",
    "A tiny spider had spun a web across the window.",
    "The teacher wrote the answer on the board.",
    "Let's take the long way home along the river.",
    "The tickets sold out within an hour.",
    "My brother can juggle four oranges at once.",
    "Every chair in the waiting room was taken.",
    "The farmer drove his tractor down the narrow lane.",
    "Could we open a window? It's rather warm in here.",
    "The parcel arrived a day earlier than promised.",
    "An owl hooted somewhere in the dark woods.",
    "She tied a red ribbon around the present.",
    "The engine made a strange rattling noise.",
    "We ate sandwiches on a bench by the fountain.",
    "The mountain road has many sharp bends.",
    "Is anyone sitting in this seat?",
    "He keeps his bicycle in the garden shed.",
    "The choir sang beautifully at the wedding.",
    "Fresh strawberries taste best in early summer.",
    "The map was folded so many times it tore.",
    "Please close the gate so the sheep stay in.",
    "The festival lights were reflected in the canal.",
    "I can't remember where I left my keys.",
    "The puppy chased its own tail around the yard.",
    "A warm bowl of porridge is a fine way to start the day.",
    "The pilot announced that we would land shortly.",
    "They argued for hours about the best pizza topping.",
    "The bell rang and the students rushed outside.",
    "Thunder rumbled far away over the sea.",
    "She found an old photograph hidden inside a book.",
    "Our kitchen window looks out over the allotments.",
    "The lift is out of order, so please use the stairs.",
    "He carved a little wooden boat for his nephew.",
    "The frost made beautiful patterns on the glass.",
    "Which way is the nearest post office?",
    "The orchestra tuned their instruments before the show.",
    "We found a shell shaped like a spiral staircase.",
    "The candle burned slowly through the long evening.",
    "Mind the gap between the train and the platform.",
    "Her handwriting is neat, small and very tidy.",
    "The shop on the corner sells buttons, thread and wool.",
    "A rainbow appeared just after the heavy shower.",
    "The kids raced each other to the end of the beach.",
    "He poured the lemonade into tall glasses with ice.",
    "The town hall clock chimed exactly nine times.",
    "Would you mind holding the door for a moment?",
    "The leaves crunched loudly under our feet.",
    "We watched the fireworks from the top of the hill.",
    "That was the quietest afternoon of the whole week.",
)


ESPEAK_MISSING = "espeak-ng is not installed (Debian/Ubuntu: apt-get install espeak-ng)"
"""The one line a script that needs espeak-ng prints when it is missing."""


def espeak_clip(voice: Voice, text: str, workdir: Path) -> Tensor:
    """`text` read by `voice`: espeak-ng's 22.05 kHz output resampled to 24 kHz, its trailing silence cut to
    TAIL_SECONDS. `workdir` holds the intermediate WAV file (one caller at a time per folder)."""
    wav = workdir / "utterance.wav"
    command = ["espeak-ng", "-v", voice.espeak_voice, "-s", str(voice.speed), "-p", str(voice.pitch), "-w", str(wav)]
    subprocess.run([*command, text], check=True, capture_output=True)
    waveform = load_audio(wav)
    last_sound = int((waveform.abs() > SILENCE).nonzero().max())
    return waveform[: last_sound + int(TAIL_SECONDS * SAMPLE_RATE)]


def write_vorbis(path: Path, waveform: Tensor) -> None:
    """Write a 24 kHz clip as Ogg Vorbis at VORBIS_LEVEL, making its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, waveform.numpy(), SAMPLE_RATE, format="OGG", subtype="VORBIS", compression_level=VORBIS_LEVEL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--prepare-only", action="store_true", help="only re-run f5lite-prepare on the audio there")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    if args.prepare_only:
        return prepare_demo(out)
    if shutil.which("espeak-ng") is None:
        print(f"make_demo_data: {ESPEAK_MISSING}", file=sys.stderr)
        return 2
    shutil.rmtree(out / "audio", ignore_errors=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for i, text in enumerate(SENTENCES):
            # Two different voices per sentence, paired differently along the list.
            first = i % len(VOICES)
            second = (first + 1 + (i // len(VOICES)) % (len(VOICES) - 1)) % len(VOICES)
            for voice in (VOICES[first], VOICES[second]):
                relative = Path("audio") / voice.speaker / f"{i:03d}_{voice.speaker}.ogg"
                write_vorbis(out / relative, espeak_clip(voice, text, workdir))
                rows.append(f"{relative.as_posix()}|{text}|{voice.speaker}\n")
    (out / "metadata.csv").write_text("audio_file|text|speaker\n" + "".join(rows), encoding="utf-8")
    (out / "ORIGIN.md").write_text(origin_note(espeak_version()), encoding="utf-8")
    return prepare_demo(out)


def prepare_demo(out: Path) -> int:
    """Run f5lite-prepare on the demo's metadata.csv, in place: cuts.jsonl.gz, vocab.txt, report.json, and a
    validation split of VAL_COUNT utterances in val/ (cuts.jsonl.gz, testset.txt)."""
    result = prepare(out / "metadata.csv", out, PrepareOptions(workers=2, val=ValSplit(count=VAL_COUNT)))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(
        f"{len(result.cuts)} + {len(result.val)} held out utterances kept, {len(result.skipped)} skipped, {size / 2**20:.2f} MiB in {out}"
    )
    return 0 if not result.skipped else 1


def espeak_version() -> str:
    """The installed espeak-ng's name and version, e.g. "espeak-ng 1.51"."""
    # "eSpeak NG text-to-speech: 1.51  Data at: /usr/lib/..." -> "espeak-ng 1.51"
    banner = subprocess.run(["espeak-ng", "--version"], check=True, capture_output=True, text=True).stdout
    return f"espeak-ng {banner.split(':')[1].split()[0]}"


def origin_note(version: str) -> str:
    voices = "\n".join(f"| {v.speaker} | `{v.espeak_voice}` | {v.speed} | {v.pitch} |" for v in VOICES)
    return f"""# Demo dataset: origin and licence

Synthetic English speech made by `scripts/make_demo_data.py` with {version}: {len(SENTENCES)} sentences
written for the f5lite project, each read by two of six voices ({2 * len(SENTENCES)} utterances), stored as Ogg
Vorbis at 24 kHz. It is small and robotic on purpose: it exists so that the tests, the `debug_tiny` recipe and
the demo run offline on a fresh clone. It is not meant to train a useful voice.

| speaker | espeak-ng voice | words per minute | pitch |
| --- | --- | --- | --- |
{voices}

Files: `audio/SPEAKER/*.ogg`, `metadata.csv` (the input, F5-TTS layout with a speaker column), and the outputs of
`f5lite-prepare metadata.csv . --val-count {VAL_COUNT}`: `cuts.jsonl.gz` (a Lhotse CutSet of the training
utterances), `vocab.txt`, `report.json`, and `val/` (the {VAL_COUNT} held-out utterances' `cuts.jsonl.gz` and a
`testset.txt` pairing each with another clip of its voice as the prompt).

## Licence

The sentences and the recordings are part of f5lite and are released under its MIT licence. espeak-ng is
GPL-3.0-or-later software; the GPL does not extend to the output a program produces from its user's input, and
these recordings contain no part of espeak-ng itself.
"""


if __name__ == "__main__":
    sys.exit(main())

"""Make the `clone` corpus: many voices from Debian's speech engines, some held out of training in every form, so that
a model trained on the rest can be asked to speak in a voice it never heard (issue 55).

Voices (`VOICES`; each a speaker name, the engine and its voice, and a vocal-tract factor):
  - recorded-speaker voices: flite's awb, rms, slt (statistical voices of CMU ARCTIC speakers) and kal16 (a diphone
    set), festival's kal and ked diphone voices (festvox-kallpc16k, festvox-kdlpc16k);
  - espeak-ng's formant variants of en-us;
  - signal-level speakers made from the training voices: the clip synthesized slower by a factor `vtl` and then
    played `vtl` times faster (its rate relabelled after resampling), which moves the pitch and every formant by
    `vtl` and keeps the tempo: a smaller (> 1) or larger (< 1) vocal tract.
Held out (`split="held_out"`): flite slt, festival ked, espeak-ng en-us+klatt and en-us+f2 with a shorter vocal tract
(en-us+f2 itself is as near the training voice en-us+f5 as two clips of one voice, to Resemblyzer). None of them, nor
any change of them, occurs in training; festival's HTS slt (the same speaker as flite slt) is not used at all.
Two levers change the training clips alone (the test rows, prompts and enrollment stay as they are): `--vtl-jitter J`
draws each clip's vocal tract around its voice's, and `--extra-voices N` adds N espeak-ng voices (`EXTRA_VOICES`) to
the voices the training clips are read by in turn.

Sentences come from `make_speak_corpus.py`'s seeded generator and word list. A training clip reads two training
sentences (a longer clip gives the model a longer voice prompt in training, since the unmasked context is a part of
each clip); test sentences never occur in training, and a third of them come from templates (`EXTRA_TEMPLATES`)
the training sentences never use. Every test word occurs in training, so the recogniser vocabulary built from the
training sentences can spell it.

OUT then holds:
  metadata.csv, audio/VOICE/*.flac    the training clips (F5-TTS layout with a speaker column), training voices only
  cuts.jsonl.gz, vocab.txt, report.json, val/    f5lite-prepare's output (IPA tokens by default)
  test/testset.txt                    id|ref_audio|ref_text|gen_text|gt_audio|voice: per held-out voice
                                      `--test-per-voice` rows, per training voice `--train-rows-per-voice` rows of
                                      unseen sentences; each prompt is a clip of that voice reading a training text
  test/voices.txt                     the enrollment list (voice|split|audio): `--enroll` clips of every voice, the
                                      speakers f5lite-eval identifies an output among (`voices=`)
  test/audio/, test/refs/, test/enroll/   the ground truth, the prompts and the enrollment clips
  asr/lm.arpa, asr/words.dict         the recogniser vocabulary, from the training sentences only
  adapt/VOICE/                        `--adapt-minutes` of one held-out voice (`--adapt-voice`, default slt) reading
                                      training texts, prepared against the corpus's vocab: the data of the adaptation
                                      recipes (`+recipe=clone_cpu_adapt`); never used by `clone_cpu`
  licences/PACKAGE.txt, LICENCES.md   each engine package's Debian copyright file, and which voice came from which
  corpus.json                         settings, voices, counts, engine versions, timings

Usage: python scripts/make_clone_corpus.py [--out DIR] [--train 4400] [--seed 0]
       (needs flite, festival, festvox-kallpc16k, festvox-kdlpc16k, espeak-ng: `make clone-corpus` installs them)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from torch import Tensor

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.audio.resample import resample
from f5lite.data.testset import TestRow, write_testset
from f5lite.metrics.langmodel import sentence_words, write_recognizer_vocabulary
from f5lite.prepare import PrepareOptions, prepare
from f5lite.prepare.val_split import ValSplit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sentence generator and clip workers: speak-corpus script
from make_speak_corpus import (  # noqa: E402
    LM_DISCOUNT,
    LM_ORDER,
    Job,
    WordList,
    draw_sentences,
    make_sentence,
    read_word_list,
    synthesize,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "runs" / "clone_corpus"
TEST_DIR = "test"
ASR_DIR = "asr"
ADAPT_DIR = "adapt"
ADAPT_VAL = 4  # clips of the adaptation data kept for its validation loss
SPLITS = ("train", "held_out")
TAIL_SECONDS = 0.1  # the engines end with up to 0.5 s of silence; keep this much of it
SILENCE = 0.01  # amplitude under which a sample counts as silence

ENGINES = {"flite": "flite", "festival": "festival", "espeak": "espeak-ng"}
"""Engine name -> the program that must be on PATH."""
PACKAGES = {
    "flite": ("flite",),
    "festival": ("festival", "festvox-kallpc16k", "festvox-kdlpc16k"),
    "espeak": ("espeak-ng", "espeak-ng-data"),
}
"""Engine name -> the Debian packages its voices come from (their copyright files are copied beside the corpus)."""


@dataclass(frozen=True)
class CloneVoice:
    """One speaker of the corpus.

    Attributes:
        name: the speaker name (folder and `voice` column).
        engine: "flite", "festival" or "espeak".
        engine_voice: the engine's voice (flite `-voice`, festival `voice_<name>`, espeak-ng `-v`).
        split: "train" or "held_out".
        vtl: vocal-tract factor: pitch and formants times `vtl`, tempo kept (1: the engine's voice as it is).
        source: what the voice is, for LICENCES.md and the docs.
    """

    name: str
    engine: str
    engine_voice: str
    split: str
    vtl: float = 1.0
    source: str = ""


def _recorded(name: str, engine: str, voice: str, source: str) -> list[CloneVoice]:
    return [CloneVoice(name if vtl == 1.0 else f"{name}_vtl{round(vtl * 100)}", engine, voice, "train", vtl, source)
            for vtl in (0.9, 1.0, 1.1, 1.2)]  # fmt: skip


_ESPEAK_SOURCE = "espeak-ng formant variant"
VOICES: tuple[CloneVoice, ...] = (
    *_recorded("awb", "flite", "awb", "flite awb: CMU ARCTIC speaker awb (Scottish male), statistical voice"),
    *_recorded("rms", "flite", "rms", "flite rms: CMU ARCTIC speaker rms (US male), statistical voice"),
    *_recorded("kal", "flite", "kal16", "flite kal16: diphone set of speaker kal (US male)"),
    CloneVoice("kal_festival", "festival", "kal_diphone", "train", 1.0, "festvox-kallpc16k: the kal diphones, LPC"),
    *(
        CloneVoice(f"espeak_{v}", "espeak", f"en-us+{v}", "train", 1.0, _ESPEAK_SOURCE)
        for v in ("f1", "f3", "f4", "f5", "m1", "m2", "m3", "m4")
    ),  # fmt: skip
    CloneVoice("slt", "flite", "slt", "held_out", 1.0, "flite slt: CMU ARCTIC speaker slt (US female), statistical"),
    CloneVoice("ked_festival", "festival", "ked_diphone", "held_out", 1.0, "festvox-kdlpc16k: speaker ked, LPC"),
    CloneVoice("espeak_klatt", "espeak", "en-us+klatt", "held_out", 1.0, _ESPEAK_SOURCE),
    # en-us+f2 itself is within 0.98 of f5 (a training voice) to the speaker encoder: held out with a shorter tract.
    CloneVoice("espeak_f2_vtl120", "espeak", "en-us+f2", "held_out", 1.2, _ESPEAK_SOURCE),
)
# The number-of-voices lever (`--extra-voices N`): espeak-ng variants of en-us that use neither the Klatt synthesizer
# (held out as en-us+klatt) nor breath (whisper), in this order. They read training clips only: the test rows and the
# enrollment stay the base corpus's, so a lever run is scored on the same rows against the same voices.
EXTRA_VOICES: tuple[CloneVoice, ...] = tuple(
    CloneVoice(f"espeak_{v.lower()}", "espeak", f"en-us+{v}", "train", 1.0, _ESPEAK_SOURCE)
    for v in ("m5", "m6", "m7", "m8", "Andy", "Annie", "Jacky", "Lee", "Mike", "Michael", "Gene", "Denis", "aunty",
              "belinda", "grandma", "grandpa", "iven", "john", "linda", "max", "norbert", "paul", "quincy", "rob")
)  # fmt: skip
ESPEAK_SPEED = 150  # words per minute (espeak-ng's default is 175: hurried for the recogniser)

# Test-only templates: slots as in make_speak_corpus.TEMPLATES, in orders the training sentences never take.
EXTRA_TEMPLATES = (
    "{adv} {det} {noun} {iv}",
    "{num} {nouns} and {det} {noun} {iv} {prep} the {place}",
    "{det} {noun} {prep} the {place} {tv} {name}",
    "was {det} {noun} {adj}",
    "{name} {iv} {prep} the {place} with {num} {nouns}",
)


def voices_of(split: str) -> list[CloneVoice]:
    """The voices of one split, in `VOICES` order."""
    return [v for v in VOICES if v.split == split]


def draw_test_sentences(words: WordList, training: Sequence[str], count: int, seed: int) -> list[str]:
    """`count` sentences from `EXTRA_TEMPLATES`, distinct, none in `training`, every word seen in `training`.

    Raises:
        ValueError: the generator cannot find that many.
    """
    rng = random.Random(seed)
    known = set(training)
    vocabulary = {word for sentence in sentence_words(training) for word in sentence}
    found: list[str] = []
    for _ in range(1000 * max(count, 1)):
        if len(found) == count:
            break
        sentence = make_sentence(rng, words, EXTRA_TEMPLATES)
        if sentence not in known and sentence not in found and set(sentence_words([sentence])[0]) <= vocabulary:
            found.append(sentence)
    if len(found) < count:
        raise ValueError(f"found only {len(found)} of {count} out-of-template test sentences")
    return found


def _program_output(command: list[str], wav: Path, text: str) -> Tensor:
    subprocess.run(command, input=text, text=True, check=True, capture_output=True)
    return load_audio(wav)  # at SAMPLE_RATE, mono


def engine_clip(voice: CloneVoice, text: str, workdir: Path) -> Tensor:
    """`text` read by `voice`'s engine at `voice.vtl`, 24 kHz mono float32 `[samples]`, trailing silence cut.

    The vocal-tract change: the engine reads `vtl` times slower, the clip is resampled to `1 / vtl` of the rate and
    labelled at the rate again, so every frequency is times `vtl` and the duration back to the engine's own.
    """
    wav, script = workdir / "clip.wav", workdir / "text.txt"
    stretch = voice.vtl
    if voice.engine == "flite":
        script.write_text(text, encoding="utf-8")
        command = ["flite", "-voice", voice.engine_voice, "--setf", f"duration_stretch={stretch}", "-f", str(script),
                   "-o", str(wav)]  # fmt: skip
        wave = _program_output(command, wav, "")
    elif voice.engine == "festival":
        script.write_text(text, encoding="utf-8")
        setup = f"(begin (voice_{voice.engine_voice}) (Parameter.set 'Duration_Stretch {stretch}))"
        wave = _program_output(["text2wave", "-eval", setup, str(script), "-o", str(wav)], wav, "")
    else:
        speed = round(ESPEAK_SPEED / stretch)
        wave = _program_output(["espeak-ng", "-v", voice.engine_voice, "-s", str(speed), "-w", str(wav), "--stdin"],
                               wav, text)  # fmt: skip
    if voice.vtl != 1.0:
        wave = resample(wave, SAMPLE_RATE, round(SAMPLE_RATE / voice.vtl))
    loud = (wave.abs() > SILENCE).nonzero()
    if not len(loud):
        raise ValueError(f"{voice.engine} voice {voice.engine_voice} made silence for {text!r}")
    return wave[: int(loud.max()) + int(TAIL_SECONDS * SAMPLE_RATE)]


@dataclass(frozen=True)
class Plan:
    """Every clip of the corpus, before any is made.

    Attributes:
        train: (relative path, text, voice) of each training clip.
        tests: (row id, voice, gen_text, ground truth path, prompt path, prompt text) of each test row.
        enroll: (voice, path) of each enrollment clip.
        jobs: every clip to synthesize (training, test ground truth, prompts, enrollment).
    """

    train: list[tuple[Path, str, CloneVoice]]
    tests: list[tuple[str, CloneVoice, str, Path, Path, str]]
    enroll: list[tuple[CloneVoice, Path]]
    jobs: list[Job]


def plan_corpus(out: Path, args: argparse.Namespace) -> tuple[Plan, list[str], list[str]]:
    """Which voice reads which text into which file; returns the plan, the training and the test sentences."""
    words = read_word_list()
    train_voices, held_voices = voices_of("train"), voices_of("held_out")
    rows = args.test_per_voice * len(held_voices) + args.train_rows_per_voice * len(train_voices)
    extra = rows // 3
    training, in_template = draw_sentences(words, args.train, rows - extra, args.seed)
    test_sentences = in_template + draw_test_sentences(words, training, extra, args.seed + 1)
    random.Random(args.seed + 2).shuffle(test_sentences)
    rng = random.Random(args.seed + 3)
    readers = train_voices + list(EXTRA_VOICES[: args.extra_voices])
    train: list[tuple[Path, str, CloneVoice]] = []
    jitter = random.Random(args.seed + 5)  # its own draw, so that --vtl-jitter 0 leaves the plan as it was
    for i in range(0, len(training) - 1, 2):
        voice = readers[(i // 2) % len(readers)]
        if args.vtl_jitter:  # each training clip its own tract, near its voice's: a speaker continuum around each
            voice = replace(voice, vtl=round(voice.vtl * jitter.uniform(1 - args.vtl_jitter, 1 + args.vtl_jitter), 4))
        train.append((Path("audio") / voice.name / f"{i // 2:05d}.flac", f"{training[i]} {training[i + 1]}", voice))
    tests: list[tuple[str, CloneVoice, str, Path, Path, str]] = []
    enroll: list[tuple[CloneVoice, Path]] = []
    jobs: list[Job] = []
    sentences = iter(test_sentences)
    test = out / TEST_DIR
    for voice in held_voices + train_voices:
        count = args.test_per_voice if voice.split == "held_out" else args.train_rows_per_voice
        # Prompts and enrollment clips read training texts: the voice, not the words, is what is held out.
        texts = rng.sample(training, args.prompts + args.enroll)
        prompts = [(test / "refs" / voice.name / f"{k:02d}.flac", t) for k, t in enumerate(texts[: args.prompts])]
        for k, text in enumerate(texts[args.prompts :]):
            enroll.append((voice, test / "enroll" / voice.name / f"{k:02d}.flac"))
            jobs.append(Job(voice, text, enroll[-1][1], engine_clip))
        jobs += [Job(voice, text, path, engine_clip) for path, text in prompts]
        for k in range(count):
            ident, gen_text = f"{voice.name}_{k:02d}", next(sentences)
            prompt, prompt_text = prompts[k % len(prompts)]
            tests.append((ident, voice, gen_text, test / "audio" / f"{ident}.flac", prompt, prompt_text))
            jobs.append(Job(voice, gen_text, tests[-1][3], engine_clip))
    jobs = [Job(voice, text, out / path, engine_clip) for path, text, voice in train] + jobs
    return Plan(train, tests, enroll, jobs), training, test_sentences


def write_lists(out: Path, plan: Plan) -> None:
    """metadata.csv (training clips), test/testset.txt (with the voice column) and test/voices.txt (enrollment)."""
    lines = [f"{path.as_posix()}|{text}|{voice.name}\n" for path, text, voice in plan.train]
    (out / "metadata.csv").write_text("audio_file|text|speaker\n" + "".join(lines), encoding="utf-8")
    rows = [TestRow(ident, prompt, prompt_text, gen_text, gt, voice=voice.name)
            for ident, voice, gen_text, gt, prompt, prompt_text in plan.tests]  # fmt: skip
    write_testset(out / TEST_DIR / "testset.txt", rows)
    base = (out / TEST_DIR).resolve()
    enroll = [
        f"{voice.name}|{voice.split}|{path.resolve().relative_to(base).as_posix()}\n" for voice, path in plan.enroll
    ]
    (out / TEST_DIR / "voices.txt").write_text("voice|split|audio\n" + "".join(enroll), encoding="utf-8")


def build_adapt(out: Path, args: argparse.Namespace, training: Sequence[str]) -> dict[str, object]:
    """`args.adapt_minutes` of the held-out voice `args.adapt_voice` reading training texts (two a clip), prepared
    in `out/adapt/VOICE` against `out/vocab.txt` (so a model trained on the corpus can be fine-tuned on it);
    returns what corpus.json records of it."""
    voice = next(v for v in VOICES if v.name == args.adapt_voice)
    folder = out / ADAPT_DIR / voice.name
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(args.seed + 4)
    rows: list[tuple[Path, str]] = []
    seconds = 0.0
    while seconds < 60 * args.adapt_minutes:  # clips one at a time until the minutes are there
        text = " ".join(rng.sample(list(training), 2))
        path = Path("audio") / f"{len(rows):04d}.flac"
        seconds += synthesize([Job(voice, text, folder / path, engine_clip)], 1)
        rows.append((path, text))
    lines = [f"{path.as_posix()}|{text}|{voice.name}\n" for path, text in rows]
    (folder / "metadata.csv").write_text("audio_file|text|speaker\n" + "".join(lines), encoding="utf-8")
    options = PrepareOptions(
        tokenizer=args.tokenizer, vocab=out / "vocab.txt", val=ValSplit(count=min(ADAPT_VAL, len(rows) // 4))
    )
    result = prepare(folder / "metadata.csv", folder, options)
    return {"voice": voice.name, "clips": len(rows), "minutes": round(seconds / 60, 2), "cuts": len(result.cuts)}


def package_version(package: str) -> str:
    """The installed Debian package's version, or "not installed"."""
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "not installed"


def write_licences(out: Path, voices: Sequence[CloneVoice]) -> dict[str, str]:
    """Copy each engine package's Debian copyright file into `licences/`, and write LICENCES.md naming which of
    `voices` came from which package; returns package -> version."""
    folder = out / "licences"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    versions = {}
    for packages in PACKAGES.values():
        for package in packages:
            versions[package] = package_version(package)
            copyright_file = Path("/usr/share/doc") / package / "copyright"
            if copyright_file.is_file():
                shutil.copyfile(copyright_file, folder / f"{package}.txt")
    lines = ["# Licences of the clone corpus's voices", "",
             "Each voice is the output of a speech engine from Debian's main section; the full terms are the packages'",
             "Debian copyright files, copied into `licences/`. MBROLA and RHVoice voices are not used (non-free or",
             "non-derivative licences).", "", "| voice | split | source | packages (version) |", "| --- | --- | --- | --- |"]  # fmt: skip
    for voice in voices:
        packages = ", ".join(f"{p} ({versions[p]})" for p in PACKAGES[voice.engine])
        shift = "" if voice.vtl == 1.0 else f"; vocal tract x{voice.vtl}"
        lines.append(f"| {voice.name} | {voice.split} | {voice.source}{shift} | {packages} |")
    (out / "LICENCES.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return versions


def build(out: Path, args: argparse.Namespace) -> dict[str, object]:
    """Make the whole corpus in `out` (see the module docstring); returns what corpus.json records."""
    plan, training, test_sentences = plan_corpus(out, args)
    started = time.perf_counter()
    for folder in ("audio", TEST_DIR, ASR_DIR, ADAPT_DIR):
        shutil.rmtree(out / folder, ignore_errors=True)
    seconds = synthesize(plan.jobs, args.workers)
    synthesized = time.perf_counter()
    (out / TEST_DIR).mkdir(exist_ok=True)
    write_lists(out, plan)
    options = PrepareOptions(tokenizer=args.tokenizer, workers=args.workers, val=ValSplit(count=args.val))
    result = prepare(out / "metadata.csv", out, options)
    prepared = time.perf_counter()
    write_recognizer_vocabulary(out / ASR_DIR, training, order=LM_ORDER, discount=LM_DISCOUNT)
    adapt = build_adapt(out, args, training)
    versions = write_licences(out, [*VOICES, *EXTRA_VOICES[: args.extra_voices]])
    return {
        "seed": args.seed,
        "train_sentences": len(training),
        "train_clips": len(plan.train),
        "test_rows": len(plan.tests),
        "test_sentences_outside_templates": len(plan.tests) // 3,
        "val_utterances": len(result.val),
        "train_cuts": len(result.cuts),
        "skipped": len(result.skipped),
        "audio_hours": round(seconds / 3600, 4),
        "voices": [asdict(v) for v in VOICES],
        "tokenizer": args.tokenizer,
        "vtl_jitter": args.vtl_jitter,
        "extra_voices": [asdict(v) for v in EXTRA_VOICES[: args.extra_voices]],
        "lm": {"order": LM_ORDER, "discount": LM_DISCOUNT, "from": "training sentences only"},
        "adapt": adapt,
        "packages": versions,
        "seconds": {
            "synthesis": round(synthesized - started, 1),
            "prepare": round(prepared - synthesized, 1),
            "total": round(time.perf_counter() - started, 1),
        },  # fmt: skip
        "workers": args.workers,
        "test_sentences": len(test_sentences),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--train", type=int, default=4400, help="training sentences, two a clip (default 4400)")
    parser.add_argument("--test-per-voice", type=int, default=15, help="test rows per held-out voice (default 15)")
    parser.add_argument("--train-rows-per-voice", type=int, default=2,
                        help="test rows (unseen sentences) per training voice (default 2)")  # fmt: skip
    parser.add_argument("--prompts", type=int, default=5, help="prompt clips per voice (default 5)")
    parser.add_argument("--enroll", type=int, default=6, help="enrollment clips per voice (default 6)")
    parser.add_argument(
        "--adapt-voice",
        default="slt",
        choices=[v.name for v in voices_of("held_out")],
        help="the held-out voice of the adaptation data (default slt)",
    )
    parser.add_argument("--adapt-minutes", type=float, default=5.0, help="minutes of adaptation data (default 5)")
    parser.add_argument("--vtl-jitter", type=float, default=0.0,
                        help="augmentation: each training clip's vocal tract times a factor drawn in [1 - J, 1 + J] "
                        "(default 0: none); prompts, enrollment and test clips keep their voice's")  # fmt: skip
    parser.add_argument("--extra-voices", type=int, default=0,
                        help=f"lever: this many more espeak-ng training voices (0 to {len(EXTRA_VOICES)}, default 0) "
                        "reading training clips only")  # fmt: skip
    parser.add_argument("--val", type=int, default=40, help="training clips prepare holds out for validation")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sentences and prompts (default 0)")
    parser.add_argument("--tokenizer", default="ipa", help="f5lite-prepare's tokenizer (default ipa)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    args = parser.parse_args(argv)
    for name in ("workers", "test_per_voice", "prompts"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not 0 <= args.vtl_jitter < 0.5:
        parser.error(f"--vtl-jitter must be in [0, 0.5), got {args.vtl_jitter}")
    if not 0 <= args.extra_voices <= len(EXTRA_VOICES):
        parser.error(f"--extra-voices must be in [0, {len(EXTRA_VOICES)}], got {args.extra_voices}")
    if args.adapt_minutes <= 0:
        parser.error(f"--adapt-minutes must be above 0, got {args.adapt_minutes}")
    if args.enroll < 2:
        parser.error(f"--enroll must be at least 2 (two clips of a voice calibrate the similarity), got {args.enroll}")
    if args.train < 4 or args.val < 0 or args.val >= args.train // 2:
        parser.error(f"--train must be at least 4 and --val in [0, --train / 2), got {args.train} and {args.val}")
    return args


def missing_programs() -> list[str]:
    """The engines' programs that are not on PATH."""
    programs = ["flite", "text2wave", "espeak-ng"]
    return [p for p in programs if shutil.which(p) is None]


def main(argv: Sequence[str] | None = None) -> int:
    """Make the corpus; 0 on success, 1 when prepare skipped clips, 2 for bad input or a missing engine."""
    args = parse_args(argv)
    missing = missing_programs()
    if missing:
        packages = " ".join(p for group in PACKAGES.values() for p in group)
        print(f"make_clone_corpus: {', '.join(missing)} not installed (apt-get install {packages})", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        record = build(out, args)
    except (ValueError, subprocess.CalledProcessError) as error:
        print(f"make_clone_corpus: {error}", file=sys.stderr)
        return 2
    (out / "corpus.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"{record['train_cuts']} training + {record['val_utterances']} validation clips, {record['test_rows']} test "
          f"rows, {record['audio_hours']} h of audio in {out} ({record['seconds']['total']} s)")  # type: ignore[index]  # fmt: skip
    return 0 if not record["skipped"] else 1


if __name__ == "__main__":
    sys.exit(main())

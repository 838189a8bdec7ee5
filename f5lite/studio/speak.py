"""Speak: a reference clip (uploaded, recorded or saved as a voice) and a script in, speech out as it is made.

A script may switch voices with `{Name}` markers (F5-TTS's multi-style syntax): text before the first marker is
spoken by the reference given on the page, and `{Name}` switches to the project's saved voice `Name`
(`voices/Name.wav` + `Name.txt`). Each stretch of one voice is planned as `f5lite-serve` plans a streamed request
(`Synthesizer.plan`: the first piece of the script short, so the first audio comes after one short sampler call),
and the pieces of all the stretches are made and joined by `Synthesizer.stream` (F5-TTS's 0.15 s cross-fade, each
piece handed out as soon as it is made, less the tail that fades into the next). With a fixed length in seconds the
script is one voice, the length spread over its pieces by `Synthesizer.plan`.

A reference without a transcript is transcribed by the offline recogniser (PocketSphinx, English). What was said
is kept as `speech/<date>-<time>.wav` with its spectrogram `.png` (`save_speech`), a name taken by another call in
the same second getting `-2`, `-3`, ...: each name is created exclusively, so two calls never share one.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf
from torch import Tensor

from f5lite.atomic import atomic_path, write_text_atomic
from f5lite.audio import SAMPLE_RATE, load_audio, log_mel
from f5lite.audio.images import mel_image
from f5lite.eval.png import grey_png
from f5lite.infer.chunking import FIRST_BYTES, check_ref_text
from f5lite.infer.plan import Piece
from f5lite.infer.reference import MIN_SECONDS
from f5lite.infer.synthesizer import Synthesizer
from f5lite.metrics.asr import load_recognizer
from f5lite.sampling import SamplerOptions
from f5lite.studio.limits import SCRIPT_CHARS
from f5lite.studio.names import typed_name
from f5lite.studio.project import Project

MAX_REF_SECONDS = 15.0
"""The longest reference accepted (the model needs room to speak after it)."""
_MARKER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Clip:
    """A voice to speak with, as the page gives it (`Synthesizer.reference` prepares it for the model).

    Attributes:
        wave: `[samples]` 24 kHz mono.
        text: its transcript.
    """

    wave: Tensor
    text: str


def load_reference(audio: str | Path | None, text: str | None) -> Clip:
    """Read a reference clip; transcribe it when `text` is empty.

    Raises:
        ValueError: no clip, an unreadable one (or one outside `load_audio`'s limits, refused on its header), one
            too short or too long, or a transcript too long for it.
    """
    if not audio:
        raise ValueError("no reference audio: upload or record a clip of the voice (or pick a saved voice)")
    wave = load_audio(audio, max_seconds=MAX_REF_SECONDS)
    seconds = wave.shape[0] / SAMPLE_RATE
    if not MIN_SECONDS <= seconds <= MAX_REF_SECONDS:
        raise ValueError(
            f"the reference clip is {seconds:.1f} s long; give {MIN_SECONDS:.0f} to {MAX_REF_SECONDS:.0f} s of speech"
        )
    # As the model reads it (whitespace runs collapsed), so that every space counts against the clip and the
    # transcript is kept so with a saved voice.
    text = " ".join((text or "").split()) or transcribe(wave)
    check_ref_text(text, seconds)
    return Clip(wave, text)


def transcribe(wave: Tensor) -> str:
    """What the offline recogniser hears in a 24 kHz clip.

    Raises:
        ValueError: nothing was recognised.
    """
    heard = load_recognizer("pocketsphinx").transcribe(wave, SAMPLE_RATE).strip()
    if not heard:
        raise ValueError("no speech was recognised in the reference clip: type its transcript")
    return heard


def save_voice(project: Project, name: str, reference: Clip) -> Path:
    """Keep a reference as the project's voice `name` (`voices/name.wav` + `name.txt`), replacing one of that name.

    Raises:
        ValueError: a name that is not valid.
    """
    name = typed_name(name, "voice")
    project.voices.mkdir(parents=True, exist_ok=True)
    path = project.voices / f"{name}.wav"
    with atomic_path(path) as temporary:
        sf.write(temporary, reference.wave.numpy(), SAMPLE_RATE, format="WAV", subtype="PCM_16")
    write_text_atomic(path.with_suffix(".txt"), reference.text + "\n")
    return path


def save_speech(project: Project, wave: Tensor, mel_type: str) -> tuple[Path, Path]:
    """Keep speech as `speech/<date>-<time>[-N].wav` (16-bit) and its spectrogram as the `.png` of the same name.

    Returns:
        The WAV file and the PNG file.
    """
    project.speech.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        wav = project.speech / (f"{stem}.wav" if n == 1 else f"{stem}-{n}.wav")
        try:
            os.close(os.open(wav, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))  # the name is ours from here on
        except FileExistsError:
            n += 1
            continue
        with atomic_path(wav) as temporary:  # over the claimed empty file: a reader never sees half of it
            sf.write(temporary, wave.numpy(), SAMPLE_RATE, format="WAV", subtype="PCM_16")
        image = wav.with_suffix(".png")  # the claimed name's: no other call makes it
        with atomic_path(image) as temporary:
            temporary.write_bytes(grey_png(mel_image(log_mel(wave[None], kind=mel_type)[0])))
        return wav, image


def parse_script(script: str) -> list[tuple[str | None, str]]:
    """Split a script at `{Name}` markers.

    Returns:
        `(voice, text)` stretches in order, blank ones dropped; voice None is the page's reference.

    Raises:
        ValueError: a script longer than `SCRIPT_CHARS`, a marker that is not a valid voice name, or a script with
            nothing to say.
    """
    if len(script) > SCRIPT_CHARS:
        raise ValueError(f"the text is {len(script)} characters long; say at most {SCRIPT_CHARS} at a time")
    parts = _MARKER.split(script)
    stretches: list[tuple[str | None, str]] = []
    voice: str | None = None
    for i, part in enumerate(parts):
        if i % 2:
            voice = typed_name(part, "voice")
        elif part.strip():
            stretches.append((voice, " ".join(part.split())))
    if not stretches:
        raise ValueError("the text is empty: type what to say")
    return stretches


def project_voice(project: Project, name: str) -> Clip:
    """A saved voice of the project.

    Raises:
        ValueError: no such voice (naming the ones there are).
    """
    path = project.voices / f"{typed_name(name, 'voice')}.wav"
    if not path.is_file() or not path.with_suffix(".txt").is_file():
        known = ", ".join(project.voice_names()) or "none yet"
        raise ValueError(f"there is no voice {name!r} in project {project.name!r} (saved voices: {known})")
    wave = load_audio(path, max_seconds=MAX_REF_SECONDS)
    return Clip(wave, path.with_suffix(".txt").read_text(encoding="utf-8").strip())


class Models:
    """The loaded model: one `Synthesizer` at a time, loaded again when another model is picked.

    Args:
        vocoder: the vocoder every model is loaded with (`vocos` or `griffin_lim`).
        vocoder_source: Vocos weights (a local directory or a hub id); None: the default.
        device: where models run (`auto`, `cpu`, `cuda`).
    """

    def __init__(self, vocoder: str, vocoder_source: str | None, device: str) -> None:
        self.vocoder = vocoder
        self.vocoder_source = vocoder_source
        self.device = device
        self.lock = threading.Lock()
        self._loaded: tuple[Path, float, Synthesizer] | None = None

    def get(self, path: Path) -> Synthesizer:
        """The synthesizer of the model at `path` (loaded again if its files changed since)."""
        # A run directory gets new checkpoints in checkpoints/, which does not change the run directory's time.
        stamp = max(p.stat().st_mtime for p in (path, path / "checkpoints") if p.exists())
        if self._loaded is None or self._loaded[:2] != (path, stamp):
            synthesizer = Synthesizer.from_pretrained(
                path, self.vocoder, vocoder_source=self.vocoder_source, device=self.device
            )
            self._loaded = (path, stamp, synthesizer)
        return self._loaded[2]


def speak(
    synthesizer: Synthesizer,
    stretches: list[tuple[Clip, str]],
    options: SamplerOptions,
    seed: int | None,
    seconds: float | None = None,
) -> Iterator[Tensor]:
    """The script's audio, piece by piece (see the module docstring).

    Args:
        synthesizer: the model.
        stretches: `(reference, text)` in order.
        options: sampler settings (`options.speed` included).
        seed: noise seed for every piece; None draws.
        seconds: a fixed length of speech (one stretch only); None: the model's predictor or the byte-ratio rule.

    Yields:
        24 kHz waveform pieces `[samples]` to be played one after the other.

    Raises:
        ValueError: `seconds` with several voices, or what `Synthesizer.reference` and `Synthesizer.plan` refuse.
    """
    if seconds is not None and len(stretches) != 1:
        raise ValueError("a fixed length in seconds needs one voice: remove the {Name} markers or the seconds")
    pieces: list[Piece] = []
    for clip, text in stretches:
        reference = synthesizer.reference(clip.wave, clip.text)
        first = FIRST_BYTES if not pieces else None
        pieces.extend(synthesizer.plan(reference, text, options.speed, first_bytes=first, seconds=seconds).pieces)
    yield from synthesizer.stream(pieces, options, seed=seed)

"""The voices a server speaks with: reference clips with their transcripts, from a folder (`--voices DIR`).

A voice is `NAME.wav` (or any audio suffix libsndfile reads) beside `NAME.txt`, its transcript. A clip without a
transcript is transcribed at start-up by the offline recogniser (PocketSphinx, English) and the text is written to
`NAME.txt`, so it is done once and can be corrected by editing that file. Each voice is loaded once: its 24 kHz
waveform, its loudness-normalised log-mel and its prepared transcript are kept in memory.

Names are what a client sends as `voice`: letters, digits, `_`, `-` and `.` (not first), at most 64 characters, so
that no name can reach outside the folder. With uploads enabled (`--voice-upload`), `add` writes a new voice
(checked: a readable clip of `MIN_SECONDS` to `max_seconds`, a transcript or the recogniser's) and `remove` deletes
one; both are atomic, and a name that exists is not replaced by `add`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf
from torch import Tensor

from f5lite.atomic import atomic_path, write_text_atomic
from f5lite.audio import SAMPLE_RATE, log_mel, normalize_rms
from f5lite.audio.io import AUDIO_EXTENSIONS, decode_audio, load_audio
from f5lite.infer.chunking import prepare_ref_text
from f5lite.metrics.asr import load_recognizer

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a voice name may be."""
MIN_SECONDS = 1.0
"""The shortest reference clip accepted."""


@dataclass(frozen=True)
class Voice:
    """A loaded reference.

    Attributes:
        name: what clients call it.
        text: its transcript, prepared as the model reads it (ends like a sentence).
        wave: `[samples]` 24 kHz mono, loudness-normalised.
        rms: its loudness before normalisation (the output is brought back to it).
        mel: `[frames, n_mels]` log-mel of `wave`, in the model's mel convention.
    """

    name: str
    text: str
    wave: Tensor
    rms: float
    mel: Tensor

    @property
    def seconds(self) -> float:
        """The clip's length."""
        return self.wave.shape[0] / SAMPLE_RATE


def check_name(name: str) -> str:
    """`name` if it is a valid voice name (see the module docstring).

    Raises:
        ValueError: naming the rule.
    """
    if not NAME.fullmatch(name):
        raise ValueError(
            f"voice name {name!r} is not valid: use 1 to 64 letters, digits, '_', '-' or '.', starting with a "
            "letter or digit"
        )
    return name


class VoiceStore:
    """The voices of a folder, loaded for a model's mel convention.

    Args:
        folder: the voices folder (None: no voices; every request is refused with "unknown voice").
        mel_type: the model's mel convention.
        max_seconds: the longest reference clip (the model needs room to speak after it).

    Raises:
        ValueError: a voice that cannot be loaded (named, with the reason).
    """

    def __init__(self, folder: Path | None, mel_type: str, max_seconds: float) -> None:
        self.folder = folder
        self._mel_type = mel_type
        self._max_seconds = max_seconds
        self._voices: dict[str, Voice] = {}
        self._lock = threading.Lock()
        if folder is not None:
            if not folder.is_dir():
                raise ValueError(f"--voices {folder} is not a folder")
            for path in sorted(folder.iterdir()):
                if path.suffix.lower() in AUDIO_EXTENSIONS and not path.name.startswith("."):
                    name = check_name(path.stem)
                    if name in self._voices:
                        raise ValueError(f"{path}: a second clip for voice {name!r}; keep one")
                    self._voices[name] = self._load(name, load_audio(path), path.with_suffix(".txt"))

    def names(self) -> list[str]:
        """The voices' names, sorted."""
        with self._lock:
            return sorted(self._voices)

    def get(self, name: str) -> Voice | None:
        """The voice called `name`, or None."""
        with self._lock:
            return self._voices.get(name)

    def add(self, name: str, audio: bytes, text: str | None) -> Voice:
        """Write and load a new voice from an uploaded clip.

        Args:
            name: its name (checked).
            audio: the clip's file content (any format libsndfile reads).
            text: its transcript; None or blank: the offline recogniser's.

        Returns:
            The voice.

        Raises:
            ValueError: a bad name, a name in use, no voices folder, or an unreadable, too short or too long clip.
        """
        check_name(name)
        if self.folder is None:
            raise ValueError("the server has no voices folder (--voices DIR)")
        wave = decode_audio(audio, f"the clip of voice {name!r}")
        self._check_length(name, wave)  # before anything is written: a refused clip leaves no transcript behind
        with self._lock:
            if name in self._voices:
                raise ValueError(f"voice {name!r} exists; delete it first to replace it")
            transcript = self.folder / f"{name}.txt"
            if text is not None and text.strip():
                write_text_atomic(transcript, text.strip() + "\n")
            voice = self._load(name, wave, transcript)
            with atomic_path(self.folder / f"{name}.wav") as temporary:
                sf.write(temporary, wave.numpy(), SAMPLE_RATE, format="WAV", subtype="PCM_16")
            self._voices[name] = voice
            return voice

    def remove(self, name: str) -> None:
        """Delete a voice's clip and transcript.

        Raises:
            KeyError: no such voice.
        """
        with self._lock:
            if name not in self._voices or self.folder is None:
                raise KeyError(name)
            del self._voices[name]
            for path in self.folder.iterdir():
                if path.stem == name and (path.suffix.lower() in AUDIO_EXTENSIONS or path.suffix == ".txt"):
                    path.unlink()

    def _check_length(self, name: str, wave: Tensor) -> None:
        seconds = wave.shape[0] / SAMPLE_RATE
        if not MIN_SECONDS <= seconds <= self._max_seconds:
            raise ValueError(
                f"voice {name!r}: its clip is {seconds:.1f} s; a reference must be {MIN_SECONDS:g} to "
                f"{self._max_seconds:g} s long"
            )

    def _load(self, name: str, wave: Tensor, transcript: Path) -> Voice:
        self._check_length(name, wave)
        if transcript.is_file():
            text = transcript.read_text(encoding="utf-8").strip()
        else:
            text = load_recognizer("pocketsphinx").transcribe(wave, SAMPLE_RATE).strip()
            if not text:
                raise ValueError(
                    f"voice {name!r}: no transcript, and the recogniser heard no words; write {transcript}"
                )
            write_text_atomic(transcript, text + "\n")
        if not text:
            raise ValueError(f"voice {name!r}: {transcript} is empty")
        normalised, rms = normalize_rms(wave)
        mel = log_mel(normalised[None], kind=self._mel_type)[0]
        return Voice(name, prepare_ref_text(text), normalised, float(rms), mel)

"""The voices a server speaks with: reference clips with their transcripts, from a folder (`--voices DIR`).

A voice is `NAME.wav` (or any audio suffix libsndfile reads) beside `NAME.txt`, its transcript. A clip without a
transcript is transcribed at start-up by the offline recogniser (PocketSphinx, English) and the text is written to
`NAME.txt`, so it is done once and can be corrected by editing that file. Each voice is loaded once: its 24 kHz
waveform, its loudness-normalised log-mel and its prepared transcript are kept in memory (a `Voice` is an
`f5lite.infer.reference.Reference` with a name). A clip is read within
its limits (`f5lite.audio.io`: the header first) and must be `MIN_SECONDS` to `max_seconds` long; its transcript's
whitespace runs become single spaces (so it is kept, and loaded again, as the model reads it), and one with more
characters, spaces included, or more of the model's tokens per second than anyone says is refused
(`Synthesizer.reference`, `f5lite.infer.chunking.check_ref_text`), since the model would make every piece of
speech at least as many frames as its tokens.

Names are what a client sends as `voice`, under f5lite's name rule (`f5lite.infer.names`: letters, digits, `_`, `-`
and `.`, not first, at most 64 characters), so that no name can reach outside the folder. With uploads enabled (`--voice-upload`), `add` writes a new voice into
`DIR/uploaded/` and `remove` deletes one of those: the voices an operator put in `DIR` itself are never deleted over
HTTP. Both are atomic, a name that exists is not replaced by `add`, and the slow part of an upload (decoding,
transcribing, the mel) runs outside the store's lock, so requests that look voices up do not wait for it.

Once the store is loaded (the server serving), the recogniser runs in a process of its own (`Recogniser`, started
at its first use): PocketSphinx holds Python's global lock for a whole clip, seconds, which in the server's process
would stop its event loop and with it every stream and `/health`; one process also keeps two uploads from sharing its
decoder at once. That process ends with the server's, however the server ends (it watches its parent). While the
folder loads, before the port opens, the recogniser runs in the server's process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from f5lite.atomic import atomic_path, write_text_atomic
from f5lite.audio import SAMPLE_RATE
from f5lite.audio.io import AUDIO_EXTENSIONS, decode_audio, load_audio
from f5lite.infer.names import check_name
from f5lite.infer.reference import MIN_SECONDS, Reference
from f5lite.metrics.asr import load_recognizer

UPLOADED = "uploaded"
"""The subfolder of the voices folder that holds the voices added over HTTP (the only ones HTTP can delete)."""


class VoiceExistsError(ValueError):
    """A voice of that name exists (or is being added)."""


class NotDeletableError(PermissionError):
    """A voice of the voices folder itself, which only its operator removes."""


@dataclass(frozen=True)
class Voice(Reference):
    """A loaded reference and the name clients call it by (`Reference`'s attributes, then `name`)."""

    name: str


class Recogniser:
    """The offline recogniser (PocketSphinx, English) in one process of its own (see the module docstring)."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def transcribe(self, wave: Tensor) -> str:
        """What is said in a 24 kHz clip `[samples]` ("" when nothing is recognised).

        Raises:
            ValueError: the recogniser's process died (the next call starts another).
        """
        with self._lock:
            if self._pool is None:
                # spawn, not fork: the server's process runs torch threads, which a forked child would inherit broken.
                self._pool = ProcessPoolExecutor(
                    1, mp_context=get_context("spawn"), initializer=_end_with, initargs=(os.getpid(),)
                )
            pool = self._pool
        try:
            return pool.submit(_transcribe, wave.numpy()).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            raise ValueError(
                "the offline recogniser's process stopped (out of memory?): give the clip's text"
            ) from None

    def close(self) -> None:
        """Stop the process, if it was started."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None


def _end_with(parent: int) -> None:
    """The recogniser's process, first: end when `parent` (the server) is gone, even killed outright.

    A pool's worker waits for work for ever; a server stopped by a signal (uvicorn raises it again once it has shut
    down) or killed never tells it to stop. Its parent's pid changes when the parent ends (the process is adopted).
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="f5lite-recogniser-parent", daemon=True).start()


def _transcribe(samples: np.ndarray) -> str:
    """The recogniser's process: one clip's transcript."""
    return load_recognizer("pocketsphinx").transcribe(torch.from_numpy(samples), SAMPLE_RATE).strip()


class VoiceStore:
    """The voices of a folder, loaded for a model's mel convention.

    Args:
        folder: the voices folder (None: no voices; every request is refused with "unknown voice").
        reference: makes a checked reference from a 24 kHz clip `[samples]` and its transcript, for the model
            (`Synthesizer.reference`).
        max_seconds: the longest reference clip (the model needs room to speak after it).

    Raises:
        ValueError: a voice that cannot be loaded (named, with the reason).
    """

    def __init__(self, folder: Path | None, reference: Callable[[Tensor, str], Reference], max_seconds: float) -> None:
        self.folder = folder
        self._reference = reference
        self._max_seconds = max_seconds
        self._voices: dict[str, Voice] = {}
        self._uploaded: set[str] = set()
        self._adding: set[str] = set()
        self._lock = threading.Lock()
        self._recogniser = Recogniser()
        self._serving = False
        if folder is not None:
            if not folder.is_dir():
                raise ValueError(f"--voices {folder} is not a folder")
            self._load_folder(folder, uploaded=False)
            self._load_folder(folder / UPLOADED, uploaded=True)
        self._serving = True

    def names(self) -> list[str]:
        """The voices' names, sorted."""
        with self._lock:
            return sorted(self._voices)

    def get(self, name: str) -> Voice | None:
        """The voice called `name`, or None."""
        with self._lock:
            return self._voices.get(name)

    def add(self, name: str, audio: bytes, text: str | None) -> Voice:
        """Write and load a new voice from an uploaded clip, into `folder/uploaded/`.

        Args:
            name: its name (checked).
            audio: the clip's file content (any format libsndfile reads).
            text: its transcript; None or blank: the offline recogniser's.

        Returns:
            The voice.

        Raises:
            VoiceExistsError: the name is taken (or being added by another request).
            ValueError: a bad name, no voices folder, or an unreadable, too short or too long clip, or a transcript
                too long for it.
        """
        check_name(name)
        if self.folder is None:
            raise ValueError("the server has no voices folder (--voices DIR)")
        with self._lock:
            if name in self._voices or name in self._adding:
                raise VoiceExistsError(f"voice {name!r} exists; delete it first to replace it")
            self._adding.add(name)
        try:
            wave = decode_audio(audio, f"the clip of voice {name!r}", max_seconds=self._max_seconds)
            transcript = " ".join((text or "").split()) or self._recognise(name, wave, None)
            voice = self._voice(name, wave, transcript)
            folder = self.folder / UPLOADED
            folder.mkdir(exist_ok=True)
            write_text_atomic(folder / f"{name}.txt", transcript + "\n")
            with atomic_path(folder / f"{name}.wav") as temporary:
                sf.write(temporary, wave.numpy(), SAMPLE_RATE, format="WAV", subtype="PCM_16")
            with self._lock:
                self._voices[name] = voice
                self._uploaded.add(name)
            return voice
        finally:
            with self._lock:
                self._adding.discard(name)

    def remove(self, name: str) -> None:
        """Delete a voice added over HTTP: its clip and transcript in `folder/uploaded/`.

        Raises:
            KeyError: no such voice.
            NotDeletableError: a voice of the folder itself.
        """
        with self._lock:
            if name not in self._voices or self.folder is None:
                raise KeyError(name)
            if name not in self._uploaded:
                raise NotDeletableError(
                    f"voice {name!r} is one of the server's own (--voices); only voices added over HTTP can be "
                    "deleted over HTTP"
                )
            del self._voices[name]
            self._uploaded.discard(name)
            for path in (self.folder / UPLOADED).iterdir():
                if path.stem == name and (path.suffix.lower() in AUDIO_EXTENSIONS or path.suffix == ".txt"):
                    path.unlink()

    def close(self) -> None:
        """Stop the recogniser's process, if one was started."""
        self._recogniser.close()

    def _load_folder(self, folder: Path, uploaded: bool) -> None:
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.suffix.lower() in AUDIO_EXTENSIONS and not path.name.startswith(".") and path.is_file():
                name = check_name(path.stem)
                if name in self._voices:
                    raise ValueError(f"{path}: a second clip for voice {name!r}; keep one")
                wave = load_audio(path, max_seconds=self._max_seconds)
                transcript = path.with_suffix(".txt")
                text = transcript.read_text(encoding="utf-8").strip() if transcript.is_file() else None
                if text == "":
                    raise ValueError(f"voice {name!r}: {transcript} is empty")
                self._voices[name] = self._voice(name, wave, text or self._recognise(name, wave, transcript))
                if uploaded:
                    self._uploaded.add(name)

    def _recognise(self, name: str, wave: Tensor, cache: Path | None) -> str:
        """The offline recogniser's transcript of a clip, written to `cache` when given."""
        self._check_length(name, wave)  # before the recogniser's time is spent on it
        if self._serving:
            text = self._recogniser.transcribe(wave)
        else:  # nothing is served yet: no stream to stop
            text = load_recognizer("pocketsphinx").transcribe(wave, SAMPLE_RATE).strip()
        if not text:
            where = cache or "its text"
            raise ValueError(f"voice {name!r}: no transcript, and the recogniser heard no words; write {where}")
        if cache is not None:
            write_text_atomic(cache, text + "\n")
        return text

    def _check_length(self, name: str, wave: Tensor) -> None:
        seconds = wave.shape[0] / SAMPLE_RATE
        if not MIN_SECONDS <= seconds <= self._max_seconds:
            raise ValueError(
                f"voice {name!r}: its clip is {seconds:.1f} s; a reference must be {MIN_SECONDS:g} to "
                f"{self._max_seconds:g} s long"
            )

    def _voice(self, name: str, wave: Tensor, text: str) -> Voice:
        """A checked voice from its clip and transcript."""
        self._check_length(name, wave)
        try:
            reference = self._reference(wave, text)
        except ValueError as err:
            raise ValueError(f"voice {name!r}: {err}") from None
        return Voice(reference.text, reference.wave, reference.rms, reference.mel, name)

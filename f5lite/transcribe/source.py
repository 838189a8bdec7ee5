"""One recording from start to finish: find its speech, cut it, transcribe the clips, keep the good ones.

This is the work of one worker process on one source file. It reads the recording in blocks for the VAD, then
each clip on its own (never the whole file), transcribes the clips in batches, writes every clip with its
transcript into the source's private staging folder, and removes again those the filters leave out (they need the
transcripts of the whole file: the speaking-rate rule compares with the file's median). What it returns is the
source's record; publishing the staging folder is the caller's job (`f5lite.transcribe.workspace`), so a run that
stops half-way leaves nothing half-written where `f5lite-prepare` looks.

Clips are written as 16-bit mono WAV at the recording's own rate (f5lite-prepare resamples to the model's), beside a
`.txt` with the transcript: correcting a clip's text is editing that one file.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import torch

from f5lite.metrics.asr import load_recognizer
from f5lite.metrics.textnorm import check_language
from f5lite.transcribe.filters import FilterSettings, Transcribed, filter_clips
from f5lite.transcribe.recognise import recognise
from f5lite.transcribe.slicing import SliceSettings, Span, plan_clips
from f5lite.transcribe.vad import WINDOW_SECONDS, SpeechTrack, load_vad_model, speech_track

CLIP_SUBTYPE = "PCM_16"
"""Sample format of the clips written."""


@dataclass(frozen=True)
class TranscribeSettings:
    """Everything that decides which clips a recording gives and their texts (a resumed run must use the same)."""

    slicing: SliceSettings = field(default_factory=SliceSettings)
    """Where recordings are cut."""
    filters: FilterSettings = field(default_factory=FilterSettings)
    """Which transcribed clips are kept."""
    asr: str = "pocketsphinx"
    """Recogniser spec of `f5lite.metrics.asr.load_recognizer` ("pocketsphinx", "whisper:DIR", ...)."""
    language: str = "en"
    """Language of the recordings: "en" or "zh"."""

    def __post_init__(self) -> None:
        check_language(self.language)

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values, flattened to `slicing.min_seconds`-style keys."""
        flat: dict[str, Any] = {"asr": self.asr, "language": self.language}
        flat.update({f"slicing.{k}": v for k, v in asdict(self.slicing).items()})
        flat.update({f"filters.{k}": v for k, v in asdict(self.filters).items()})
        return flat


@dataclass(frozen=True)
class Job:
    """One source file to transcribe.

    Attributes:
        path: the recording (absolute).
        key: its path relative to IN (POSIX), the name the report uses.
        clip_dir: the folder its kept clips go to, relative to OUT (POSIX).
        staging: its private folder for clips in the making.
    """

    path: Path
    key: str
    clip_dir: str
    staging: Path


@dataclass(frozen=True)
class Work:
    """What every job of a run shares (sent once to each worker).

    Attributes:
        settings: the cutting, filtering and recognising.
        batch_size: clips per recogniser call.
        threads: torch threads of each worker.
    """

    settings: TranscribeSettings
    batch_size: int = 8
    threads: int = 1


@dataclass(frozen=True)
class ClipRecord:
    """One clip cut from a source: where, what was heard, and whether it was kept.

    Attributes:
        name: the clip's file stem (`<source stem>_00001`); its files exist only when kept.
        start: where it starts in the source (s).
        end: where it ends (s).
        speech_seconds: how much of it the VAD heard as speech.
        text: the normalised transcript.
        confidence: the recogniser's, or None.
        reason: why it was left out; None for a kept clip.
    """

    name: str
    start: float
    end: float
    speech_seconds: float
    text: str
    confidence: float | None
    reason: str | None


@dataclass(frozen=True)
class SourceRecord:
    """What became of one source file (its `<key hash>.json` in OUT's state folder once published).

    Attributes:
        key: path relative to IN.
        clip_dir: folder of its kept clips, relative to OUT.
        duration: its length (s).
        sample_rate: its own rate.
        channels: its channel count.
        clips: every clip cut, kept or not, in order.
        left_out: stretches of speech not made into clips by the slicer, with the reason.
        seconds_taken: wall-clock time of its processing.
    """

    key: str
    clip_dir: str
    duration: float
    sample_rate: int
    channels: int
    clips: tuple[ClipRecord, ...]
    left_out: tuple[Span, ...]
    seconds_taken: float

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SourceRecord:
        """A record from `to_json`'s values."""
        return cls(
            **{k: data[k] for k in ("key", "clip_dir", "duration", "sample_rate", "channels", "seconds_taken")},
            clips=tuple(ClipRecord(**clip) for clip in data["clips"]),
            left_out=tuple(Span(**span) for span in data["left_out"]),
        )

    @property
    def kept(self) -> tuple[ClipRecord, ...]:
        """The clips kept."""
        return tuple(clip for clip in self.clips if clip.reason is None)


@dataclass(frozen=True)
class Failure:
    """A source file that could not be transcribed, with the one-line reason."""

    key: str
    message: str


def process_source(job: Job, work: Work) -> SourceRecord | Failure:
    """Transcribe one recording into `job.staging` (see the module docstring); never raises for a bad file.

    Args:
        job: the source and where its clips go.
        work: the settings, shared by every job.

    Returns:
        The source's record, or a `Failure` naming why the file could not be transcribed.
    """
    started = time.perf_counter()
    try:
        return _process(job, work, started)
    except Exception as err:  # noqa: BLE001 - one file's failure, of any kind, must not end a run of hours
        text = str(err).replace("\n", " ").strip()
        prefix = f"{job.path}: "
        return Failure(job.key, text[len(prefix) :] if text.startswith(prefix) else f"{type(err).__name__}: {text}")


@functools.cache
def _vad() -> torch.jit.ScriptModule:
    return load_vad_model()


def _process(job: Job, work: Work, started: float) -> SourceRecord:
    torch.set_num_threads(work.threads)
    settings = work.settings
    track = speech_track(job.path, _vad())
    spans, left_out = plan_clips(track.probs, track.rms_db, WINDOW_SECONDS, track.duration, settings.slicing)
    recognizer = load_recognizer(settings.asr, settings.language)
    stem = Path(job.clip_dir).name
    names = [f"{stem}_{i + 1:05d}" for i in range(len(spans))]
    job.staging.mkdir(parents=True, exist_ok=True)
    heard = []
    with sf.SoundFile(str(job.path)) as audio:
        for first in range(0, len(spans), work.batch_size):
            batch = spans[first : first + work.batch_size]
            waves = []
            for name, span in zip(names[first:], batch, strict=False):
                path = job.staging / f"{name}.wav"
                sf.write(path, _read_span(audio, span).numpy(), track.sample_rate, subtype=CLIP_SUBTYPE)
                # The recogniser hears the clip as written (16-bit), so its text is the transcript of the file.
                waves.append(torch.from_numpy(sf.read(path, dtype="float32")[0]))
            heard += recognise(recognizer, waves, track.sample_rate, work.batch_size)
    transcribed = [
        Transcribed(span.seconds, _speech_seconds(track, span, settings.slicing), h.text, h.confidence)
        for span, h in zip(spans, heard, strict=True)
    ]
    reasons = filter_clips(transcribed, settings.filters)
    clips = []
    for name, span, clip, reason in zip(names, spans, transcribed, reasons, strict=True):
        if reason is None:
            (job.staging / f"{name}.txt").write_text(f"{clip.text}\n", encoding="utf-8")
        else:
            (job.staging / f"{name}.wav").unlink()
        clips.append(
            ClipRecord(name, span.start, span.end, round(clip.speech_seconds, 3), clip.text, clip.confidence, reason)
        )
    return SourceRecord(
        key=job.key,
        clip_dir=job.clip_dir,
        duration=track.duration,
        sample_rate=track.sample_rate,
        channels=track.channels,
        clips=tuple(clips),
        left_out=tuple(left_out),
        seconds_taken=round(time.perf_counter() - started, 3),
    )


def _read_span(audio: sf.SoundFile, span: Span) -> torch.Tensor:
    """`[samples]` float32 mono of one stretch of an open file."""
    rate = audio.samplerate
    first = round(span.start * rate)
    audio.seek(first)
    block = audio.read(max(0, round(span.end * rate) - first), dtype="float32", always_2d=True)
    return torch.from_numpy(np.ascontiguousarray(block.mean(axis=1)))


def _speech_seconds(track: SpeechTrack, span: Span, slicing: SliceSettings) -> float:
    """Seconds of the span's windows whose speech probability reaches the slicer's threshold."""
    first, end = math.floor(span.start / WINDOW_SECONDS), math.ceil(span.end / WINDOW_SECONDS)
    return float(np.count_nonzero(track.probs[first:end] >= slicing.threshold)) * WINDOW_SECONDS

"""The training manifest: `manifest.jsonl`, one JSON object per kept utterance, written by `f5lite-prepare`.

A row holds `audio_path`, `text`, `duration` (seconds), `frames` (mel frames at 24 kHz), `sample_rate` (of the
source file) and, when known, `speaker`; with a mel cache also `mel_path` and `mel_type`. Paths inside the
manifest's own directory are written relative to it, so a prepared directory that holds its audio (like the demo
dataset) can be moved or shipped as a whole; other paths are written absolute. Reading resolves both.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from f5lite.atomic import write_text_atomic

MANIFEST_NAME = "manifest.jsonl"
"""File name of the manifest inside a prepared directory."""

VOCAB_NAME = "vocab.txt"
"""File name of the vocab inside a prepared directory."""

REPORT_NAME = "report.json"
"""File name of the preparation report inside a prepared directory."""

MEL_DIR_NAME = "mels"
"""Folder of cached log-mels inside a prepared directory."""

DURATION_DECIMALS = 6
"""Durations are kept to the microsecond, so that a manifest reads back equal to the rows it was written from."""

_REQUIRED_KEYS = ("audio_path", "text", "duration", "frames")


@dataclass(frozen=True)
class ManifestRow:
    """One utterance of a prepared dataset.

    Attributes:
        audio_path: The audio file, absolute.
        text: The transcript; a tuple of tokens for datasets tokenized ahead of time (F5-TTS pinyin datasets).
        duration: Length of the source audio in seconds.
        frames: Number of mel frames the audio gives at 24 kHz (what the frame budget counts).
        sample_rate: Sample rate of the source file in Hz, or None when the source format does not say.
        speaker: Speaker name, when the layout gives one.
        mel_path: Cached log-mel `[frames, 100]` as a `.npy` file, absolute, or None.
        mel_type: Mel convention of the cached mel ("vocos" or "bigvgan"), or None without a cache.
    """

    audio_path: Path
    text: str | tuple[str, ...]
    duration: float
    frames: int
    sample_rate: int | None = None
    speaker: str | None = None
    mel_path: Path | None = None
    mel_type: str | None = None

    def to_json(self, base: Path) -> dict[str, Any]:
        """The row as written to the manifest, paths relative to `base` when they lie inside it.

        Args:
            base: The manifest's directory.

        Returns:
            A JSON-ready dict; keys whose value is None are left out.
        """
        row: dict[str, Any] = {
            "audio_path": portable_path(self.audio_path, base),
            "text": self.text if isinstance(self.text, str) else list(self.text),
            "duration": round(self.duration, DURATION_DECIMALS),
            "frames": self.frames,
            "sample_rate": self.sample_rate,
            "speaker": self.speaker,
            "mel_path": None if self.mel_path is None else portable_path(self.mel_path, base),
            "mel_type": self.mel_type,
        }
        return {key: value for key, value in row.items() if value is not None}


def portable_path(path: Path, base: Path) -> str:
    """`path` relative to `base` (POSIX separators) when it lies inside `base`, else absolute.

    Args:
        path: An absolute path.
        base: The directory the written file lives in.

    Returns:
        The path as text.
    """
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def write_manifest(path: str | os.PathLike[str], rows: list[ManifestRow]) -> None:
    """Write `rows` as `manifest.jsonl` atomically (UTF-8, non-ASCII kept readable, one row per line).

    Args:
        path: The manifest file; its directory must exist.
        rows: The rows, in the order to keep.
    """
    manifest = Path(path).absolute()
    lines = [json.dumps(row.to_json(manifest.parent), ensure_ascii=False) + "\n" for row in rows]
    write_text_atomic(manifest, "".join(lines))


def read_manifest(path: str | os.PathLike[str]) -> list[ManifestRow]:
    """Read a `manifest.jsonl`, resolving relative paths against the manifest's directory.

    Args:
        path: The manifest file.

    Returns:
        The rows in file order.

    Raises:
        ValueError: The file is missing or unreadable, a line is not a JSON object, or a row lacks a required key
            or has a value of the wrong type. The message names the file and the line.
    """
    manifest = Path(path).absolute()
    try:
        text = manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read manifest {manifest}: {err}") from err
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            rows.append(_parse_row(line, manifest.parent, f"{manifest}:{number}"))
    return rows


def _parse_row(line: str, base: Path, where: str) -> ManifestRow:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not valid JSON ({err.msg})") from err
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a manifest row must be a JSON object")
    missing = [key for key in _REQUIRED_KEYS if key not in data]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    text = data["text"]
    if not (isinstance(text, str) or (isinstance(text, list) and all(isinstance(t, str) for t in text))):
        raise ValueError(f"{where}: 'text' must be a string or a list of string tokens")
    mel_path = data.get("mel_path")
    try:
        return ManifestRow(
            audio_path=base / str(data["audio_path"]),
            text=text if isinstance(text, str) else tuple(text),
            duration=float(data["duration"]),
            frames=int(data["frames"]),
            sample_rate=None if data.get("sample_rate") is None else int(data["sample_rate"]),
            speaker=None if data.get("speaker") is None else str(data["speaker"]),
            mel_path=None if mel_path is None else base / str(mel_path),
            mel_type=None if data.get("mel_type") is None else str(data["mel_type"]),
        )
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: a value has the wrong type ({err})") from err

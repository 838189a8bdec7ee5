"""The manifest of earlier f5lite versions: `manifest.jsonl`, read so that directories they prepared still train.

`f5lite-prepare` now writes a Lhotse CutSet (`cuts.jsonl.gz`, see `f5lite.data.cuts`) and removes the
`manifest.jsonl` an earlier version left in its OUT_DIR. A manifest holds one JSON object per kept utterance:
`audio_path`, `text`, `duration` (seconds), `frames` (mel frames at 24 kHz), `sample_rate` (of the source file)
and, when known, `speaker`; with a mel cache also `mel_path` and `mel_type`. Paths are relative to the manifest's
directory or absolute; reading resolves both.

The names of the other files of a prepared directory (`vocab.txt`, `report.json`, `mels/`, `val/`) are defined here
too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "manifest.jsonl"
"""File name of the manifest inside a directory prepared by an earlier f5lite."""

VOCAB_NAME = "vocab.txt"
"""File name of the vocab inside a prepared directory."""

REPORT_NAME = "report.json"
"""File name of the preparation report inside a prepared directory."""

MEL_DIR_NAME = "mels"
"""Folder of cached log-mels inside a prepared directory."""

VAL_DIR_NAME = "val"
"""Folder of the held-out validation split inside a prepared directory (`f5lite-prepare --val-count`)."""

VAL_TESTSET_NAME = "testset.txt"
"""The validation split's test-set file (for `f5lite-eval` and `eval.prompts`), inside `VAL_DIR_NAME`."""

_REQUIRED_KEYS = ("audio_path", "text", "duration", "frames")


@dataclass(frozen=True)
class ManifestRow:
    """One utterance as a manifest (or an F5-TTS prepared dataset, see `f5lite.data.f5tts_arrow`) gives it.

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
    return list(iter_manifest(path))


def iter_manifest(path: str | os.PathLike[str]) -> Iterator[ManifestRow]:
    """The rows of a `manifest.jsonl` one at a time (the file is never held whole), as `read_manifest` reads them.

    Raises:
        ValueError: as `read_manifest`, when the offending line is reached.
    """
    manifest = Path(path).absolute()
    try:
        with open(manifest, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield _parse_row(line, manifest.parent, f"{manifest}:{number}")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read manifest {manifest}: {err}") from err


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

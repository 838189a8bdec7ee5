"""Enrollment lists: the clips of every voice of a corpus, for the cloning metrics (`f5lite.metrics.cloning`).

The file is UTF-8 with the header `voice|split|audio` and one clip per line: the voice's name (non-empty), its split
(`train`: a voice the model was trained on, `held_out`: one it never heard) and the clip's audio file, relative to
the list. Every voice has at least two clips (the same-voice mean of the calibration needs a pair) and one split.
Blank lines are skipped. Every problem is a one-line `ValueError` naming the file and line, raised while reading.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENROLLMENT_HEADER = "voice|split|audio"
"""The header line of an enrollment list."""
SPLITS = ("train", "held_out")
"""The values of the `split` column."""


@dataclass(frozen=True)
class Enrollment:
    """The voices of an enrollment list.

    Attributes:
        file: the list (absolute path).
        splits: each voice's split (`train` or `held_out`), in the order the voices first appear.
        clips: each voice's audio files (absolute paths), at least two, in file order.
    """

    file: Path
    splits: dict[str, str]
    clips: dict[str, tuple[Path, ...]]


def read_enrollment(path: str | os.PathLike[str]) -> Enrollment:
    """Read an enrollment list (`voice|split|audio`).

    Args:
        path: the file.

    Returns:
        Its voices, with their splits and clips.

    Raises:
        ValueError: one line naming the file (and line): a missing or unreadable file, a wrong header, a row with the
            wrong number of fields, an empty voice, an unknown split, a voice given two splits, a missing audio file,
            a clip listed twice for its voice, a voice with a single clip, or no rows at all.
    """
    file = Path(path)
    lines = _lines(file)
    if lines[0][1].strip() != ENROLLMENT_HEADER:
        raise ValueError(f"{file}:{lines[0][0]}: the header must be {ENROLLMENT_HEADER!r}, got {lines[0][1].strip()!r}")
    base = file.resolve().parent
    splits: dict[str, tuple[str, int]] = {}  # voice -> its split and the line that gave it
    clips: dict[str, dict[Path, int]] = {}  # voice -> its clips and their lines
    for number, line in lines[1:]:
        where = f"{file}:{number}"
        voice, split, audio = _fields(where, line)
        known, first = splits.setdefault(voice, (split, number))
        if known != split:
            raise ValueError(f"{where}: voice {voice!r} is {split!r} here but {known!r} on line {first}")
        clip = (base / audio).resolve()
        if not clip.is_file():
            raise ValueError(f"{where}: audio {clip} does not exist")
        listed = clips.setdefault(voice, {})
        if clip in listed:
            raise ValueError(f"{where}: audio {audio!r} of voice {voice!r} is already listed on line {listed[clip]}")
        listed[clip] = number
    if not clips:
        raise ValueError(f"enrollment list {file} has a header but no rows")
    for voice, listed in clips.items():
        if len(listed) < 2:
            raise ValueError(
                f"{file}:{splits[voice][1]}: voice {voice!r} has one clip; each voice needs at least two "
                "(the same-voice mean of the calibration compares two clips of one voice)"
            )
    return Enrollment(
        file=file.resolve(),
        splits={voice: split for voice, (split, _) in splits.items()},
        clips={voice: tuple(listed) for voice, listed in clips.items()},
    )


def _lines(file: Path) -> list[tuple[int, str]]:
    if not file.is_file():
        problem = "is a directory, not a file" if file.is_dir() else "no such file"
        raise ValueError(f"enrollment list {file}: {problem}")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "it is not UTF-8"
        raise ValueError(f"cannot read enrollment list {file}: {reason}") from None
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise ValueError(f"enrollment list {file} is empty")
    return lines


def _fields(where: str, line: str) -> tuple[str, str, str]:
    fields = [field.strip() for field in line.split("|")]
    if len(fields) != 3:
        raise ValueError(f"{where}: expected 3 fields separated by '|' ({ENROLLMENT_HEADER}), got {len(fields)}")
    voice, split, audio = fields
    if not voice:
        raise ValueError(f"{where}: the voice is empty")
    if split not in SPLITS:
        raise ValueError(f"{where}: split {split!r} is not valid; use {' or '.join(SPLITS)}")
    if not audio:
        raise ValueError(f"{where}: the audio is empty")
    return voice, split, audio

"""Enrollment lists (`voice|split|audio`): read relative to the file, and every problem one line naming its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from f5lite.metrics.voices import ENROLLMENT_HEADER, read_enrollment


@pytest.fixture
def clips(tmp_path: Path) -> Path:
    """Empty stand-in audio files (reading the list only checks that they exist)."""
    for name in ("ann/1.wav", "ann/2.wav", "bob/1.wav", "bob/2.wav", "bob/3.wav"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    return tmp_path


def write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = ("ann|train|ann/1.wav", "bob|held_out|bob/1.wav", "", "ann|train|ann/2.wav", "bob|held_out| bob/2.wav ")


def test_voices_their_splits_and_clips_in_file_order(clips: Path, monkeypatch) -> None:
    file = write(clips / "voices.txt", ENROLLMENT_HEADER, *GOOD)
    monkeypatch.chdir("/")  # paths are relative to the file
    enrollment = read_enrollment(file)
    assert enrollment.file == file
    assert enrollment.splits == {"ann": "train", "bob": "held_out"}
    assert enrollment.clips == {
        "ann": (clips / "ann/1.wav", clips / "ann/2.wav"),
        "bob": (clips / "bob/1.wav", clips / "bob/2.wav"),
    }


BAD = {
    "header": (("voice|audio", *GOOD), r"voices.txt:1: the header must be 'voice\|split\|audio', got 'voice\|audio'"),
    "fields": ((ENROLLMENT_HEADER, "ann|train"), r"voices.txt:2: expected 3 fields separated by '\|'"),
    "empty voice": ((ENROLLMENT_HEADER, " |train|ann/1.wav"), r"voices.txt:2: the voice is empty"),
    "split": (
        (ENROLLMENT_HEADER, "ann|test|ann/1.wav"),
        r"voices.txt:2: split 'test' is not valid; use train or held_out",
    ),
    "missing audio": ((ENROLLMENT_HEADER, "ann|train|ann/9.wav"), r"voices.txt:2: audio .*ann/9.wav does not exist"),
    "two splits": (
        (ENROLLMENT_HEADER, "bob|train|bob/1.wav", "bob|held_out|bob/2.wav"),
        r"voices.txt:3: voice 'bob' is 'held_out' here but 'train' on line 2",
    ),
    "one clip": (
        (ENROLLMENT_HEADER, "ann|train|ann/1.wav", "ann|train|ann/2.wav", "bob|train|bob/3.wav"),
        r"voices.txt:4: voice 'bob' has one clip; each voice needs at least two",
    ),
    "twice": (
        (ENROLLMENT_HEADER, "ann|train|ann/1.wav", "ann|train|./ann/1.wav"),
        r"voices.txt:3: audio './ann/1.wav' of voice 'ann' is already listed on line 2",
    ),
    "no rows": ((ENROLLMENT_HEADER,), r"enrollment list .*voices.txt has a header but no rows"),
    "empty": (("",), r"enrollment list .*voices.txt is empty"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_lists_give_one_line_naming_the_file_and_line(clips: Path, case: str) -> None:
    lines, message = BAD[case]
    with pytest.raises(ValueError, match=message) as caught:
        read_enrollment(write(clips / "voices.txt", *lines))
    assert "\n" not in str(caught.value)


def test_missing_or_unreadable_lists(clips: Path) -> None:
    with pytest.raises(ValueError, match=r"enrollment list .*nothing.txt: no such file"):
        read_enrollment(clips / "nothing.txt")
    with pytest.raises(ValueError, match=r"enrollment list .*ann: is a directory"):
        read_enrollment(clips / "ann")
    (clips / "latin1.txt").write_bytes(b"voice|split|audio\n\xe9|train|ann/1.wav\n")
    with pytest.raises(ValueError, match=r"cannot read enrollment list .*latin1.txt: it is not UTF-8"):
        read_enrollment(clips / "latin1.txt")

"""`f5lite.atomic`: a write replaces its target whole or not at all, and is on disk (data, then the rename) after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import f5lite.atomic as atomic


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """What was synced and renamed, in order, as `(what, name)`."""
    seen: list[tuple[str, str]] = []
    sync_file, sync_dir, replace = atomic.fsync_file, atomic.fsync_dir, os.replace

    def file(path: str | os.PathLike[str]) -> None:
        seen.append(("file", Path(path).name))
        sync_file(path)

    def folder(path: str | os.PathLike[str]) -> None:
        seen.append(("dir", Path(path).name))
        sync_dir(path)

    def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        seen.append(("rename", Path(target).name))
        replace(source, target)

    monkeypatch.setattr(atomic, "fsync_file", file)
    monkeypatch.setattr(atomic, "fsync_dir", folder)
    monkeypatch.setattr(atomic.os, "replace", rename)
    return seen


def test_a_file_is_synced_before_its_rename_and_its_directory_after(tmp_path: Path, events: list) -> None:
    (tmp_path / "a.json").write_text("old")
    atomic.write_json_atomic(tmp_path / "a.json", {"k": "ü"})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == '{\n  "k": "ü"\n}\n'
    assert events == [("file", f".a.json.{os.getpid()}.tmp"), ("rename", "a.json"), ("dir", tmp_path.name)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, events: list) -> None:
    (tmp_path / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_path(tmp_path / "a.txt") as temporary:
        temporary.write_text("half")
        raise RuntimeError
    assert (tmp_path / "a.txt").read_text() == "old" and events == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_a_directory_is_synced_file_by_file_then_itself_then_its_parent(tmp_path: Path, events: list) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "stale.bin").write_bytes(b"x")
    with atomic.atomic_directory(out, lambda _: True) as staging:
        (staging / "a.bin").write_bytes(b"a")
        (staging / "b.bin").write_bytes(b"b")
    assert sorted(p.name for p in out.iterdir()) == ["a.bin", "b.bin"]
    assert sorted(events[:2]) == [("file", "a.bin"), ("file", "b.bin")]
    assert events[2][0] == "dir" and events[2][1].startswith(".export.tmp-")
    assert events[3:] == [("rename", "export"), ("dir", tmp_path.name)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # the old one moved aside and removed


def test_rename_durably_moves_a_folder_of_files(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "clip.wav").write_bytes(b"RIFF")
    (tmp_path / "clips").mkdir()
    atomic.rename_durably(staging, tmp_path / "clips" / "a")
    assert (tmp_path / "clips" / "a" / "clip.wav").read_bytes() == b"RIFF" and not staging.exists()

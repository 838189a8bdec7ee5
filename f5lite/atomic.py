"""Atomic writes of files and whole directories, so that a reader (or a re-run after a crash) never sees half of one.

Each writer writes to a temporary file (or directory) next to the target and renames it over the target; a rename
within one file system replaces it in one step. The written data is flushed to disk (`fsync`) before the rename and
the directory holding the target after it, so that a power cut or a kernel crash leaves the old content or the new
one, never an empty or half-written file under the target's name, nor a rename that is lost. `f5lite-prepare` writes
its outputs this way, run directories their config and vocab, checkpoints their `latest` pointer, and exports their
whole directory (`atomic_directory`). This is the one place that writes files atomically: the few writers that
build a folder themselves and then rename it into place (a checkpoint, a transcribed recording's clips) do the
rename through `rename_durably`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a directory's entries to disk: a rename into it (or a file created in it) survives a crash after this.

    Args:
        path: The directory.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a closed file's data to disk (the writer's buffers must have been flushed or the file closed).

    Args:
        path: The file.
    """
    with open(path, "rb") as file:
        os.fsync(file.fileno())


def rename_durably(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Rename a finished file, or a folder of files, to `target`, so that a crash leaves it whole or not there at all.

    The data is flushed to disk before the rename (the file; or each file of the folder, and the folder's entries),
    and the directory of `target` after it. Both must be on one file system.

    Args:
        source: The finished file, or a folder holding files only.
        target: The name it gets: a file there is replaced, a folder there must be empty.
    """
    source, target = Path(source), Path(target)
    if source.is_dir():
        for path in source.iterdir():
            fsync_file(path)
        fsync_dir(source)
    else:
        fsync_file(source)
    os.replace(source, target)
    fsync_dir(target.parent)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Give a temporary path to write to; when the block succeeds it replaces `path`, otherwise it is removed.

    The temporary file sits next to `path` (a rename across file systems would not be atomic) and is named after
    the process id, so two processes writing the same target do not clobber each other's half-written files. It is
    flushed to disk before the rename, and the directory after it. Close what you wrote before the block ends.

    Args:
        path: The file to create or replace; its directory must exist.

    Yields:
        The temporary path. Write the whole content there.
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        rename_durably(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 text (LF line endings as given) to `path` atomically.

    Args:
        path: The file to create or replace; its directory must exist.
        text: The whole content.
    """
    with atomic_path(path) as temporary:
        temporary.write_bytes(text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write `data` as indented UTF-8 JSON (non-ASCII kept readable) to `path` atomically.

    Args:
        path: The file to create or replace; its directory must exist.
        data: Anything `json.dumps` accepts.
    """
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


@contextmanager
def atomic_directory(
    out: str | os.PathLike[str], replaceable: Callable[[Path], bool], what: str = "what is being written"
) -> Iterator[Path]:
    """Give an empty staging directory; when the block succeeds it becomes `out`, replacing a previous one.

    The staging directory sits next to `out` and gets the usual umask-based modes; its files and entries are flushed
    to disk before the swap, and the parent directory after it. The staging directory holds files only (no folders). An existing `out` is replaced only when it is empty or `replaceable(out)` says so (a previous
    export, say), so nobody's other files are ever mixed with or deleted by the new ones.

    Args:
        out: the directory to create or replace.
        replaceable: whether an existing non-empty `out` may be replaced.
        what: what `out` holds when it may be replaced ("an export"), for the message.

    Yields:
        The staging directory. Write the whole content there.

    Raises:
        ValueError: `out` is a file, or a non-empty directory that may not be replaced.
    """
    target = Path(out)
    if target.is_file():
        raise ValueError(f"cannot write to {target}: it is a file")
    if target.is_dir() and any(target.iterdir()) and not replaceable(target):
        raise ValueError(f"cannot write to {target}: it is a non-empty directory that is not {what}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield staging
        _publish_modes(staging)
        _swap_into_place(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap_into_place(staging: Path, out: Path) -> None:
    """Rename the finished directory to `out`; an old one is moved aside first and removed after."""
    if not out.exists():
        rename_durably(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    old.rmdir()
    out.rename(old)
    rename_durably(staging, out)
    shutil.rmtree(old, ignore_errors=True)


def _publish_modes(staging: Path) -> None:
    """Give the directory and files the usual umask-based modes (mkdtemp makes 0700)."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)
    for path in staging.iterdir():
        path.chmod(0o666 & ~umask)

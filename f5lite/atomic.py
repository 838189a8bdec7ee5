"""Atomic file writes, so that a reader (or a re-run after a crash) never sees a half-written file.

Each writer writes to a temporary file in the target's own directory and renames it over the target; a rename
within one file system replaces the file in one step. `f5lite-prepare` writes all its outputs (manifest, vocab,
report, cached mels) this way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Give a temporary path to write to; when the block succeeds it replaces `path`, otherwise it is removed.

    The temporary file sits next to `path` (a rename across file systems would not be atomic) and is named after
    the process id, so two processes writing the same target do not clobber each other's half-written files.

    Args:
        path: The file to create or replace; its directory must exist.

    Yields:
        The temporary path. Write the whole content there.
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
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

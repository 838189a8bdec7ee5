"""Which files in OUT_DIR `f5lite-prepare` wrote, so that it replaces and removes only those, never anyone else's.

OUT_DIR may be a folder that holds other files, the input's own folder included (preparing in place is allowed).
A run records the fixed files it wrote in `report.json` (`outputs`); the mels it cached are named by the cuts of
the `cuts.jsonl.gz` it wrote (or, for a directory prepared by an earlier version, by its `manifest.jsonl`). The next
run may replace or remove exactly those; any other file in its way (a `vocab.txt` of the user's, a `.npy` under
`mels/` that nothing of ours names, a `manifest.jsonl` that no report of ours lists) makes it refuse before any work.

A `manifest.jsonl` written by an earlier version is removed by the next run, which writes `cuts.jsonl.gz` instead:
a prepared directory never holds both formats.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from f5lite.data.cuts import CUTS_NAME, MEL_PATH
from f5lite.data.manifest import (
    MANIFEST_NAME,
    REPORT_NAME,
    VAL_DIR_NAME,
    VAL_TESTSET_NAME,
    VOCAB_NAME,
    read_manifest,
)

VAL_OUTPUTS = (f"{VAL_DIR_NAME}/{CUTS_NAME}", f"{VAL_DIR_NAME}/{VAL_TESTSET_NAME}")
"""The validation split's files (relative to OUT_DIR)."""
FIXED_OUTPUTS = (CUTS_NAME, VOCAB_NAME, REPORT_NAME, *VAL_OUTPUTS)
"""The files a run may write besides cached mels (relative to OUT_DIR)."""
LEGACY_OUTPUTS = (MANIFEST_NAME,)
"""Files that earlier versions wrote and this one removes (it writes `cuts.jsonl.gz` instead)."""
_EARLIER_VERSION_OUTPUTS = (MANIFEST_NAME, VOCAB_NAME, REPORT_NAME)  # what a report without `outputs` wrote
_REPORT_KEYS = ("layout", "kept", "skipped", "settings")  # present in every report f5lite-prepare ever wrote


@dataclass(frozen=True)
class Owned:
    """What an earlier run wrote in OUT_DIR (absolute paths)."""

    files: frozenset[Path]
    mels: frozenset[Path]


def owned_by_earlier_run(out: Path) -> Owned:
    """The files an earlier `f5lite-prepare` wrote in `out` (nothing when it holds no report of ours).

    Args:
        out: The output directory, absolute.

    Returns:
        Its fixed outputs (those listed in the report, among the names this or an earlier version writes) and the
        mels its cuts or manifest name.
    """
    try:
        report = json.loads((out / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Owned(frozenset(), frozenset())
    if not isinstance(report, dict) or not all(key in report for key in _REPORT_KEYS):
        return Owned(frozenset(), frozenset())
    # Reports of the first versions did not list their outputs; they always wrote all three files.
    names = report.get("outputs", list(_EARLIER_VERSION_OUTPUTS))
    known = set(FIXED_OUTPUTS) | set(LEGACY_OUTPUTS)
    files = frozenset(out / name for name in names if name in known)
    mels: set[Path] = set()
    # A damaged file of ours: its mels are simply not claimed (and so never removed).
    for cuts in (out / CUTS_NAME, out / VAL_DIR_NAME / CUTS_NAME):
        if cuts in files and cuts.is_file():
            with contextlib.suppress(OSError, EOFError, ValueError):
                mels.update(Path(os.path.normpath(cuts.parent / rel)) for rel in _mel_paths_in_cuts(cuts))
    if out / MANIFEST_NAME in files and (out / MANIFEST_NAME).is_file():
        with contextlib.suppress(ValueError):
            mels.update(r.mel_path for r in read_manifest(out / MANIFEST_NAME) if r.mel_path is not None)
    return Owned(files, frozenset(mels))


def _mel_paths_in_cuts(path: Path) -> Iterator[str]:
    """The `mel_path` of every cut in a `cuts.jsonl.gz` (as written: relative to its folder, or absolute)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            custom = json.loads(line).get("custom") or {}
            if isinstance(custom.get(MEL_PATH), str):
                yield custom[MEL_PATH]


def check_targets(out: Path, targets: list[Path], owned: Owned) -> None:
    """Refuse when a file this run would write (or remove) exists and was not written by an earlier run.

    Args:
        out: The output directory (named in the message).
        targets: The files this run would write, and the legacy files it would remove.
        owned: What an earlier run wrote there.

    Raises:
        ValueError: naming the first such file.
    """
    for path in targets:
        if path.exists() and path not in owned.files and path not in owned.mels:
            raise ValueError(
                f"{path} exists and was not written by f5lite-prepare, which never replaces files it did not write: "
                f"move it away or choose another OUT_DIR than {out}"
            )


def remove_leftovers(owned: Owned, written: set[Path], mel_dir: Path) -> None:
    """Remove what the earlier run wrote and this one did not write again, and mel folders that this emptied.

    Args:
        owned: What the earlier run wrote.
        written: What this run wrote (absolute paths).
        mel_dir: The mel cache folder, removed when this leaves it empty.
    """
    removed = sorted((owned.files | owned.mels) - written)
    for path in removed:
        path.unlink(missing_ok=True)
    for folder in sorted({p.parent for p in removed if p.parent.parent == mel_dir}):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if owned.mels and mel_dir.is_dir() and not any(mel_dir.iterdir()):
        mel_dir.rmdir()
    val_dir = mel_dir.parent / VAL_DIR_NAME
    if any(p.parent == val_dir for p in removed) and val_dir.is_dir() and not any(val_dir.iterdir()):
        val_dir.rmdir()

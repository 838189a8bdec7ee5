"""Which files in OUT_DIR `f5lite-prepare` wrote, so that it replaces and removes only those, never anyone else's.

OUT_DIR may be a folder that holds other files, the input's own folder included (preparing in place is allowed).
A run records the fixed files it wrote in `report.json` (`outputs`); the mels it cached are named by the rows of
the `manifest.jsonl` it wrote. The next run may replace or remove exactly those; any other file in its way (a
`vocab.txt` of the user's, a `.npy` under `mels/` that no manifest of ours names) makes it refuse before any work.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from f5lite.data.manifest import MANIFEST_NAME, REPORT_NAME, VOCAB_NAME, read_manifest

FIXED_OUTPUTS = (MANIFEST_NAME, VOCAB_NAME, REPORT_NAME)
"""The files a run may write besides cached mels."""
_REPORT_KEYS = ("layout", "kept", "skipped", "settings")  # present in every report f5lite-prepare ever wrote


@dataclass(frozen=True)
class Owned:
    """What an earlier run wrote in OUT_DIR (absolute paths)."""

    files: frozenset[Path]
    mels: frozenset[Path]


def owned_by_earlier_run(out: Path) -> Owned:
    """The files an earlier `f5lite-prepare` wrote in `out` (nothing when it holds no report of ours)."""
    try:
        report = json.loads((out / REPORT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Owned(frozenset(), frozenset())
    if not isinstance(report, dict) or not all(key in report for key in _REPORT_KEYS):
        return Owned(frozenset(), frozenset())
    # Reports of earlier versions did not list their outputs; they always wrote all three files.
    names = report.get("outputs", list(FIXED_OUTPUTS))
    files = frozenset(out / name for name in names if name in FIXED_OUTPUTS)
    mels: frozenset[Path] = frozenset()
    if out / MANIFEST_NAME in files and (out / MANIFEST_NAME).is_file():
        with contextlib.suppress(ValueError):  # a damaged manifest of ours: its mels are simply not claimed
            mels = frozenset(r.mel_path for r in read_manifest(out / MANIFEST_NAME) if r.mel_path is not None)
    return Owned(files, mels)


def check_targets(out: Path, targets: list[Path], owned: Owned) -> None:
    """Refuse when a file this run would write exists and was not written by an earlier run.

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
    """Remove what the earlier run wrote and this one did not write again, and mel folders that this emptied."""
    removed = sorted((owned.files | owned.mels) - written)
    for path in removed:
        path.unlink(missing_ok=True)
    for folder in sorted({p.parent for p in removed if p.parent.parent == mel_dir}):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if owned.mels and mel_dir.is_dir() and not any(mel_dir.iterdir()):
        mel_dir.rmdir()

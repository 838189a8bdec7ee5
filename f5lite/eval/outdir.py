"""The output directory of `f5lite-eval`: its settings, the results appended row by row, and resuming a run.

`settings.json` is written before the first row and `results.jsonl` gets one JSON line per finished row (flushed and
synced), so a crash or an interrupt keeps every finished row. A rerun into the same directory with the same settings
resumes: the rows already there (whose audio is still there) are kept, the others are evaluated. Results of two runs
are never mixed: a directory holding a run with other settings, or anything that is not an `f5lite-eval` output, is
refused before anything is loaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from f5lite.atomic import write_json_atomic, write_text_atomic

SETTINGS_FILE = "settings.json"
"""What the run in this directory is (model, test set, metrics and their backends, sampler); resuming needs equal."""
RESULTS_FILE = "results.jsonl"
"""One JSON object per evaluated row, in test-set order."""
SUMMARY_FILE = "summary.json"
"""Means, the ground-truth floor, the settings and the versions; written when every row is done."""
REPORT_FILE = "report.html"
"""The self-contained HTML report; written with the summary."""
AUDIO_DIR = "audio"
"""Where synthesized audio goes, as `<id>.wav`."""


def resumable_rows(root: Path, settings: Mapping[str, Any], ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Check that `root` may take this run's results (reading only), and find the rows an earlier run finished.

    Args:
        root: the output directory; it may be missing.
        settings: this run's settings, JSON-serializable.
        ids: the ids of this run's rows.

    Returns:
        The finished rows by id: those of `ids` in `results.jsonl` whose `audio`, when relative, is still in `root`.

    Raises:
        ValueError: `root` is a file, a non-empty directory without `settings.json`, or an earlier run with other
            settings.
    """
    if root.exists() and not root.is_dir():
        raise ValueError(f"output {root} is a file, not a directory")
    if not root.is_dir() or not any(root.iterdir()):
        return {}
    stored = _read_settings(root / SETTINGS_FILE)
    if stored is None:
        raise ValueError(
            f"output {root} is not empty and holds no f5lite-eval run; give a new or empty directory "
            "(results of two runs are never mixed)"
        )
    current = json.loads(json.dumps(settings))
    if stored != current:
        changed = sorted(k for k in stored.keys() | current.keys() if stored.get(k) != current.get(k))
        raise ValueError(
            f"output {root} holds an f5lite-eval run with other settings (differing: {', '.join(changed)}); "
            "give another directory, or delete it to start over"
        )
    wanted = set(ids)
    done: dict[str, dict[str, Any]] = {}
    for row in _read_results(root / RESULTS_FILE):
        ident = row.get("id")
        if ident in wanted and (Path(row["audio"]).is_absolute() or (root / row["audio"]).is_file()):
            done[ident] = row
    return done


def start_output(root: Path, settings: Mapping[str, Any], kept: Sequence[Mapping[str, Any]]) -> None:
    """Make `root` ready for rows: settings written, `results.jsonl` holding only `kept`, no stale summary or report.

    Args:
        root: the output directory (created with its parents).
        settings: this run's settings.
        kept: rows of an earlier run that this run keeps, in order.
    """
    (root / AUDIO_DIR).mkdir(parents=True, exist_ok=True)
    # A summary or report of the earlier run would disagree with the results while this run is under way.
    for name in (SUMMARY_FILE, REPORT_FILE):
        (root / name).unlink(missing_ok=True)
    write_json_atomic(root / SETTINGS_FILE, settings)
    write_text_atomic(root / RESULTS_FILE, "".join(_line(row) for row in kept))


def append_result(root: Path, row: Mapping[str, Any]) -> None:
    """Append one finished row to `results.jsonl`, on disk before this returns.

    Args:
        root: the output directory.
        row: the row's results, JSON-serializable.
    """
    # An append, not an atomic write (`f5lite.atomic`): a kill while writing leaves at most a torn last line, which
    # `_read_results` skips (that row is evaluated again); rewriting the whole file for each row would take time
    # quadratic in the rows.
    with open(root / RESULTS_FILE, "a", encoding="utf-8") as file:
        file.write(_line(row))
        file.flush()
        os.fsync(file.fileno())


def _line(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _read_settings(path: Path) -> dict[str, Any] | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return stored if isinstance(stored, dict) else None


def _read_results(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a run killed while writing it; that row is evaluated again
        if isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("audio"), str):
            rows.append(row)
    return rows

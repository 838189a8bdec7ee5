"""Results files of the benchmarks: JSON (and a Markdown page, a PNG chart) that record where and when they were taken.

Numbers compare only with the machine, software and date they were measured on: `run_header` records the CPU, cores,
GPU, OS, the versions of Python, torch, f5lite (its git commit in a checkout) and of the packages a benchmark names,
and the UTC date. `write_results` refuses a document, or a row of a list, without one.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
_DISPLAY = {"python": "Python", "f5-tts": "F5-TTS", "f5lite_git": "f5lite git"}
REPO = Path(__file__).resolve().parents[1]


def _cpuinfo(key: str) -> str | None:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        return next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith(key)), None)
    return None


def cpu_model() -> str:
    """The CPU's model name from `/proc/cpuinfo`, else `platform.processor()` or the architecture."""
    return _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown"


def cpu_flags() -> list[str]:
    """The CPU's vector extensions that decide the speed of fp32 and bf16 (AVX2, AVX-512, AVX-512 BF16, AMX)."""
    flags = set((_cpuinfo("flags") or "").split())
    return [f for f in _FLAGS if f in flags]


def versions(packages: Sequence[str] = ()) -> dict[str, str | None]:
    """Versions of Python, torch, f5lite (its git commit, `+modified` when changed) and `packages` (None: absent)."""
    import torch

    from f5lite.version import __version__

    found: dict[str, str | None] = {"python": platform.python_version(), "torch": torch.__version__}
    found["f5lite"] = __version__
    if (commit := _git_commit()) is not None:
        found["f5lite_git"] = commit
    for name in packages:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def run_header(packages: Sequence[str] = ()) -> dict[str, Any]:
    """Where and when results are taken: `{"date", "machine", "versions"}`, every result's first keys.

    `date` is ISO 8601 in UTC; `machine` holds `cpu`, `flags` (its vector extensions: `cpu_flags`), `logical_cores`,
    `gpu` (the CUDA device's name, or None) and `os`; `versions` is `versions(packages)`.
    """
    import torch

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpu": cpu_model(),
            "flags": cpu_flags(),
            "logical_cores": os.cpu_count() or 0,
            "gpu": gpu,
            "os": platform.platform(),
        },
        "versions": versions(packages),
    }


def describe(header: Mapping[str, Any]) -> str:
    """A `run_header` (or a document that starts with one) as one sentence: machine; versions; date."""
    machine, found = header["machine"], header["versions"]
    flags, gpu = ", ".join(machine["flags"]) or "no AVX2", f", {machine['gpu']}" if machine["gpu"] else ""
    where = f"{machine['cpu']} ({flags}), {machine['logical_cores']} logical cores{gpu}"
    names = ", ".join(f"{_DISPLAY.get(name, name)} {value}" for name, value in found.items() if value is not None)
    return f"{where}; {names}; {header['date']}"


def table(head: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> list[str]:
    """A Markdown table's lines: the header, the rule (`align[i]` "r" right-aligns column i) and one line per row."""
    rule = ["---:" if align[i : i + 1] == "r" else "---" for i in range(len(head))]
    return [f"| {' | '.join(head)} |", f"| {' | '.join(rule)} |", *(f"| {' | '.join(map(str, r))} |" for r in rows)]


def write_results(
    path: Path,
    document: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    markdown: str | None = None,
    *,
    indent: int = 1,
    plot: Callable[[Path], None] | None = None,
) -> None:
    """Write `document` as JSON at `path`, and beside it the Markdown page (`.md`) and `plot`'s chart (`.png`).

    Raises:
        ValueError: The document, or a row of a list, records no machine, versions or date.
    """
    for row in [document] if isinstance(document, Mapping) else document:
        if missing := _missing_header(row):
            raise ValueError(f"{path.name}: the results record no {', '.join(missing)}: add run_header()")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")
    if markdown is not None:
        path.with_suffix(".md").write_text(markdown, encoding="utf-8")
    if plot is not None:
        plot(path.with_suffix(".png"))


def _git_commit() -> str | None:
    """The short commit of the checkout holding f5lite, `+modified` when its files differ; None outside git."""
    if not (REPO / ".git").exists():
        return None
    git = ["git", "-C", str(REPO)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "f5lite"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+modified" if dirty.stdout.strip() else "")


def _missing_header(row: Mapping[str, Any]) -> list[str]:
    """What of a run header a results object lacks."""
    machine, found = row.get("machine"), row.get("versions")
    if not isinstance(machine, Mapping) or not isinstance(found, Mapping):
        return ["machine", "versions", "date"]
    checks = {"CPU": "cpu" in machine, "torch version": "torch" in found, "f5lite version": "f5lite" in found}
    return [what for what, ok in {**checks, "date": bool(row.get("date"))}.items() if not ok]

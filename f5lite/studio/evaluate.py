"""Evaluate and export: `f5lite-eval` on a model of the project, `f5lite-export` of a run, as processes.

An evaluation scores the model on the project dataset's held-out test set (`dataset/val/testset.txt`, written by
`f5lite-prepare --val-count`) into `evals/NAME/` (`summary.json`, `report.html`). An export writes the EMA weights
of a run's newest checkpoint as an f5lite export directory (`exports/NAME/`, what Speak, `f5lite-infer` and
`f5lite-serve` load); pruning writes them as one F5-TTS-layout `.safetensors` file in half precision
(`exports/NAME/model_<update>.safetensors` + `vocab.txt`: the inference weights alone, as F5-TTS's own app prunes
a checkpoint). A download is a zip of an export or an evaluation, made under the project's `downloads/`.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from f5lite.studio import jobs
from f5lite.studio.data import job_dir
from f5lite.studio.overrides import literal
from f5lite.studio.project import Project

TESTSET = Path("val") / "testset.txt"
"""The test set inside a prepared dataset."""


def start_eval(
    project: Project, model: Path, name: str, steps: int, vocoder: str, vocoder_source: str | None, device: str
) -> jobs.JobState:
    """Start `f5lite-eval` of `model` on the project's test set into `evals/NAME`, with the studio's vocoder and device.

    Raises:
        ValueError: a bad name, no test set, a path holding `${`, or an evaluation that runs already.
    """
    out = project.child("evals", name)
    data = project.dataset()
    if data is None or not (data / TESTSET).is_file():
        raise ValueError("the project's dataset has no test set: prepare it with a validation split (Data tab)")
    # f5lite-eval sets these keys verbatim (no Hydra grammar), but OmegaConf would still resolve a `${...}` in them.
    command = [
        sys.executable, "-m", "f5lite.eval", f"model={literal(str(model), 'the model')}",
        f"testset={literal(str(data / TESTSET), 'the test set')}", f"output={literal(str(out), 'the output')}",
        f"sample.vocoder={vocoder}", f"sample.steps={steps}", f"device={device}",
    ]  # fmt: skip
    if vocoder_source:
        command.append(f"sample.vocoder_source={literal(vocoder_source, 'the vocoder source')}")
    return jobs.start(job_dir(project, "eval"), command)


def summary(project: Project, name: str) -> dict[str, Any] | None:
    """An evaluation's `summary.json`, or None if it has none (yet)."""
    path = project.child("evals", name) / "summary.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def report(project: Project, name: str) -> Path | None:
    """An evaluation's `report.html`, or None."""
    path = project.child("evals", name) / "report.html"
    return path if path.is_file() else None


def start_export(project: Project, run: str, name: str, prune: bool) -> jobs.JobState:
    """Start `f5lite-export` of a run's newest checkpoint into `exports/NAME` (pruned: F5-TTS layout, fp16).

    Raises:
        ValueError: a bad name, no such run, an export of that name, or an export that runs already.
    """
    source = project.child("runs", run)
    out = project.child("exports", name)
    if not (source / "checkpoints").is_dir():
        raise ValueError(f"run {run!r} has no checkpoints to export")
    if out.exists():
        raise ValueError(f"export {name!r} exists: pick another name")
    command = [sys.executable, "-m", "f5lite.train.export", str(source), "--out", str(out)]
    if prune:
        command += ["--format", "f5tts", "--dtype", "fp16"]
    return jobs.start(job_dir(project, "export"), command)


def archive(project: Project, kind: str, name: str) -> Path:
    """A zip of `exports/NAME` or `evals/NAME`, under the project's `downloads/`.

    Raises:
        ValueError: a bad kind or name, or nothing of that name.
    """
    if kind not in ("exports", "evals"):
        raise ValueError(f"cannot download {kind!r}: choose exports or evals")
    folder = project.child(kind, name)
    if not folder.is_dir():
        raise ValueError(f"there is no {kind.rstrip('s')} {name!r}")
    downloads = project.folder / "downloads"
    downloads.mkdir(exist_ok=True)
    made = shutil.make_archive(str(downloads / f"{kind}-{name}"), "zip", folder)
    return Path(made)

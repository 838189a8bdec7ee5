"""A training process killed with SIGKILL during asynchronous saves always restarts from a complete checkpoint."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from f5lite.storage.store import CheckpointStore

ARGS = [
    "+recipe=debug_tiny", "data.num_workers=0", "logger.every=1", "ckpt.every=1", "ckpt.async=true",
    "ckpt.keep_last=2", "optim.max_updates=100000",
]  # fmt: skip


def kill_during_saves(run: Path, trials: int, seed: int) -> list[int]:
    """Start training, kill it with SIGKILL at a random moment after it committed a checkpoint; `trials` times.

    Returns:
        The update each trial's restart would resume from.
    """
    rng = random.Random(seed)
    resumed_steps = []
    for trial in range(trials):
        child = subprocess.Popen(
            [sys.executable, "-m", "f5lite.train", *ARGS, f"run_dir={run}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        latest = run / "checkpoints" / "latest"
        start = latest.read_text() if latest.exists() else ""
        deadline = time.time() + 120
        while (not latest.exists() or latest.read_text() == start) and time.time() < deadline:
            time.sleep(0.05)  # wait until this process has committed a checkpoint of its own
        time.sleep(rng.uniform(0.0, 1.5))  # then kill at a random moment, saves happen every update
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        pointed = run / "checkpoints" / latest.read_text().strip()
        assert (pointed / "manifest.json").is_file(), f"trial {trial}: latest names an incomplete {pointed}"
        ckpt = CheckpointStore(run / "checkpoints", writer=False).load_latest()
        assert ckpt is not None, f"trial {trial}: no intact checkpoint"
        resumed_steps.append(ckpt.step)
    return resumed_steps


@pytest.mark.heavy
def test_sigkill_of_training_during_async_saves_few_trials(tmp_path: Path) -> None:
    steps = kill_during_saves(tmp_path / "run", trials=3, seed=7)
    assert steps == sorted(steps) and steps[-1] > steps[0]


@pytest.mark.slow
def test_sigkill_of_training_during_async_saves(tmp_path: Path) -> None:
    steps = kill_during_saves(tmp_path / "run", trials=10, seed=1)
    assert steps == sorted(steps) and steps[-1] > steps[0]

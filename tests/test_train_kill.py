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

from f5lite.train.store import CheckpointStore

ARGS = [
    "+recipe=debug_tiny", "data.num_workers=0", "logger.every=1", "ckpt.every=1", "ckpt.async=true",
    "ckpt.keep_last=2", "optim.max_updates=100000",
]  # fmt: skip


@pytest.mark.slow
def test_sigkill_of_training_during_async_saves(tmp_path: Path) -> None:
    run = tmp_path / "run"
    rng = random.Random(1)
    resumed_steps = []
    for trial in range(10):
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
    assert resumed_steps == sorted(resumed_steps) and resumed_steps[-1] > resumed_steps[0]

"""Two gloo ranks under torchrun: a stop request seen by one rank stops both after the same update, and rank 0's
choice of checkpoint is what every rank resumes from, whatever the other ranks' disks hold."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.data_helpers import file_digests
from support.trainer_helpers import BASE

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "f5lite.train", *BASE, *args]


def rank_pid(agent: int, rank: int) -> int | None:
    """The pid of the worker of `rank` that the torchrun agent `agent` started (read from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == agent and f"RANK={rank}".encode() in environ:
            return int(entry.name)
    return None


def test_a_sigterm_to_one_rank_stops_both_after_the_same_update(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = torchrun(f"run_dir={run}", "optim.max_updates=100000", "ckpt.every=3", "ckpt.stop_check_every=2")
    agent = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    deadline = time.time() + 180
    while not (run / "checkpoints" / "latest").exists():
        assert agent.poll() is None and time.time() < deadline
        time.sleep(0.1)
    rank1 = rank_pid(agent.pid, 1)
    assert rank1 is not None
    os.kill(rank1, signal.SIGTERM)  # rank 0 never sees a signal
    try:
        _, err = agent.communicate(timeout=120)  # neither rank may hang in a collective
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
    stops = [line for line in err.splitlines() if "stopped by a signal; checkpoint at update" in line]
    assert len(stops) == 2, err[-3000:]
    steps = {int(line.rsplit(" ", 1)[1]) for line in stops}
    assert len(steps) == 1, stops  # the same update on both ranks
    step = steps.pop()
    assert step % 2 == 0 and (run / "checkpoints" / "latest").read_text().strip() == f"step-{step:08d}"
    assert f"stopped by signal 15: checkpoint of update {step} written" in err


@pytest.mark.heavy
def test_every_rank_resumes_from_rank_0s_choice_whatever_its_own_disk_holds(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    first = subprocess.run(
        torchrun(f"run_dir={shared}", "optim.max_updates=4", "ckpt.every=2", "ckpt.keep_last=0"),
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    # Node-local run directories: rank 1's copy of the newest checkpoint is damaged.
    for rank in (0, 1):
        shutil.copytree(shared, tmp_path / f"r{rank}")
    weights = tmp_path / "r1" / "checkpoints" / "step-00000004" / "model.safetensors"
    damaged = bytearray(weights.read_bytes())
    damaged[-3] ^= 0xFF
    weights.write_bytes(bytes(damaged))
    rank1_before = file_digests(tmp_path / "r1")

    run_dir = f"run_dir={tmp_path}/r${{oc.env:LOCAL_RANK}}"  # each rank its own directory
    second = subprocess.run(
        torchrun(run_dir, "optim.max_updates=6", "ckpt.every=2", "ckpt.keep_last=0"),
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resumed from {tmp_path / 'r0' / 'checkpoints' / 'step-00000004'} (update 4)" in second.stderr
    assert "skipping damaged" not in second.stderr  # rank 1 never read its own copy
    assert (tmp_path / "r0" / "checkpoints" / "step-00000006" / "manifest.json").is_file()
    assert file_digests(tmp_path / "r1") == rank1_before  # only rank 0 writes


def single(*args: str) -> list[str]:
    return [sys.executable, "-m", "f5lite.train", *BASE, *args]


def sampler_state(run: Path, step: int) -> dict:
    import json

    return json.loads((run / "checkpoints" / f"step-{step:08d}" / "meta.json").read_text())["sampler"]


@pytest.mark.slow  # two 2-rank launches and a 1-rank one (about 30 s); `make test-slow`
def test_a_run_moves_from_two_ranks_to_one_and_back_within_an_epoch(tmp_path: Path) -> None:
    """The epoch continues on the other number of ranks, leaving out what the earlier rounds used (each utterance
    once: checked in tests/data/test_batching.py); the earlier parts stay in the state for later resumes."""
    run = tmp_path / "run"
    common = [f"run_dir={run}", "ckpt.every=2", "ckpt.keep_last=0"]
    steps = [
        (torchrun, 2, None),  # two ranks: 2 rounds of 2 batches
        (single, 4, "resuming epoch 0 on 1 ranks after 2 rounds on 2"),  # one rank: 2 more rounds of 1 batch
        (torchrun, 5, "resuming epoch 0 on 2 ranks after 2 rounds on 1"),  # two ranks again
    ]
    for launch, updates, logged in steps:
        proc = subprocess.run(launch(*common, f"optim.max_updates={updates}"), capture_output=True, text=True,
                              timeout=300, env=ENV)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert logged is None or logged in proc.stderr
    at_2, at_4, at_5 = (sampler_state(run, step) for step in (2, 4, 5))
    assert (at_2["epoch"], at_2["world_size"], at_2["rounds"], at_2["segments"]) == (0, 2, 2, [])
    assert (at_4["epoch"], at_4["world_size"], at_4["rounds"], at_4["segments"]) == (0, 1, 2, [[2, 2]])
    assert (at_5["epoch"], at_5["world_size"], at_5["rounds"], at_5["segments"]) == (0, 2, 1, [[2, 2], [1, 2]])


@pytest.mark.heavy
def test_rank_0_evaluates_and_both_ranks_stop_early_together(tmp_path: Path) -> None:
    """Only rank 0 evaluates (one eval.jsonl line per evaluation); its early-stop decision ends both ranks after the
    same update (a rank that went on alone would hang in the gradient all-reduce until the timeout)."""
    import json

    run = tmp_path / "run"
    # With a vanishing learning rate the EMA's validation loss stops improving after a few evaluations.
    args = ["optim.max_updates=40", "ckpt.every=2", "eval.every=2", "eval.patience=1", "optim.lr=1e-9"]
    proc = subprocess.run(torchrun(f"run_dir={run}", *args), capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (run / "logs" / "eval.jsonl").read_text().splitlines()]
    updates = [row["update"] for row in rows]
    assert updates == list(range(2, updates[-1] + 1, 2)) and updates[-1] < 40
    stop = updates[-1]
    meta = json.loads((run / "checkpoints" / f"step-{stop:08d}" / "meta.json").read_text())
    assert meta["finished"] is True and (run / "checkpoints" / "latest").read_text().strip() == f"step-{stop:08d}"
    assert (run / "export" / "model.safetensors").is_file()
    assert proc.stderr.count("stopping early") == 1

"""Runs that survive real clusters on one machine: preemption with loader workers, bounded stop-time saves, a second
launch into a live run directory, stale locks, relaunches that must be refused without touching the run directory,
and accelerate modes the trainer does not support."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from accelerate.utils import DistributedType
from support.data_helpers import file_digests
from support.trainer_helpers import BASE, assert_same_tensors, demo_slice, final_state, make

from f5lite.storage.names import LOCK_FILE
from f5lite.train import Trainer
from f5lite.train.update import bad_update

UPDATES = 24


def train_command(run: Path, data: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "f5lite.train", *BASE, f"run_dir={run}", f"data.dir={data}", "data.num_workers=2",
        "data.max_samples=4", f"optim.max_updates={UPDATES}", "ckpt.every=4", "logger.every=4", *extra,
    ]  # fmt: skip


def wait_for_checkpoint(run: Path, child: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not (run / "checkpoints" / "latest").exists():
        assert child.poll() is None and time.time() < deadline, "training ended or stalled before a checkpoint"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_slice(tmp_path_factory.mktemp("faults") / "data", 24)


@pytest.mark.heavy
def test_sigterm_to_the_process_group_with_workers_saves_and_resumes_exactly(tmp_path: Path, data: Path) -> None:
    """SLURM and torchrun signal the whole group, loader workers included: the run still saves its last update,
    exits 143, a second launch meanwhile is refused, and the same command then finishes as if never stopped."""
    straight = subprocess.run(train_command(tmp_path / "straight", data), capture_output=True, text=True, timeout=300)
    assert straight.returncode == 0, straight.stderr[-2000:]

    run = tmp_path / "stopped"
    child = subprocess.Popen(train_command(run, data), stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_checkpoint(run, child)
    # Frozen while the second launch starts (seconds on a loaded machine), so the run cannot finish meanwhile; the
    # SIGTERM sent while it is stopped arrives when it continues.
    os.killpg(child.pid, signal.SIGSTOP)
    second = subprocess.run(train_command(run, data), capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert f"run_dir {run} is in use by pid {child.pid}" in second.stderr
    os.killpg(child.pid, signal.SIGTERM)  # the main process and both workers
    os.killpg(child.pid, signal.SIGCONT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, err[-2000:]
    assert "DataLoader worker" not in err and "Traceback" not in err
    stopped_at = int((run / "checkpoints" / "latest").read_text().strip().split("-")[1])
    assert f"checkpoint at update {stopped_at}" in err and 0 < stopped_at < UPDATES
    assert not (run / LOCK_FILE).exists()

    resumed = subprocess.run(train_command(run, data), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed from {run / 'checkpoints'}" in resumed.stderr
    a, b = final_state(tmp_path / "straight", UPDATES), final_state(run, UPDATES)
    for group in ("model", "ema", "optimizer"):
        assert_same_tensors(a[group], b[group], group)


SLOW_STOP = """
import os, signal, sys, time
import f5lite.storage.store as store
from f5lite.config import compose_config
from f5lite.train import Trainer

real = store.write_safetensors
def slow(path, *args, **kwargs):
    if "step-00000003" in str(path):
        time.sleep(30)  # a disk far too slow for the stop budget
    return real(path, *args, **kwargs)
store.write_safetensors = slow
trainer = Trainer(compose_config(sys.argv[1:]))
original = trainer.train_update
def update(batches):
    loss = original(batches)
    if trainer.update == 3:
        print(f"stop requested at {time.monotonic()}", flush=True)  # CLOCK_MONOTONIC: the test's clock too
        os.kill(os.getpid(), signal.SIGTERM)
    return loss
trainer.train_update = update
trainer.fit()
"""


def test_a_stop_time_save_past_its_budget_exits_in_time_and_keeps_the_last_checkpoint(tmp_path: Path) -> None:
    script = tmp_path / "slow_stop.py"
    script.write_text(SLOW_STOP)
    run = tmp_path / "run"
    args = [*BASE, f"run_dir={run}", "ckpt.every=2", "ckpt.stop_timeout_s=1", "optim.max_updates=50"]
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=120)
    ended = time.monotonic()
    assert proc.returncode == 143, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if "did not finish within ckpt.stop_timeout_s=1" in line]
    assert len(lines) == 1 and "the previous checkpoint is intact" in lines[0]
    requested = float(proc.stdout.split("stop requested at ")[1].split()[0])
    # Timed from the stop request, not the launch (imports and set-up take long on a busy machine).
    assert ended - requested < 20  # not the 30 s the slow write would take
    assert (run / "checkpoints" / "latest").read_text().strip() == "step-00000002"
    assert not (run / LOCK_FILE).exists()


def test_a_live_lock_refuses_and_a_stale_one_is_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import json
    import socket

    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"host": socket.gethostname(), "pid": holder.pid, "since": 0}
        (run / LOCK_FILE).write_text(json.dumps(lock))
        with pytest.raises(ValueError, match=rf"in use by pid {holder.pid} on this host"):
            make(tmp_path, "optim.max_updates=1")
        assert not (run / "config.yaml").exists()  # refused before writing anything
        other_host = {"host": "elsewhere", "pid": 1, "since": 0}
        (run / LOCK_FILE).write_text(json.dumps(other_host))  # a live heartbeat from another node
        with pytest.raises(ValueError, match="in use by pid 1 on host elsewhere"):
            make(tmp_path, "optim.max_updates=1")
        (run / LOCK_FILE).write_text(json.dumps(lock))
    finally:
        holder.kill()
        holder.wait()
    with caplog.at_level("WARNING"):
        make(tmp_path, "optim.max_updates=1").fit()  # the holder is gone: its lock is stale
    assert "taking over the stale lock" in caplog.text and not (run / LOCK_FILE).exists()
    old = time.time() - 3600  # another node's lock, silent for an hour
    (run / LOCK_FILE).write_text(json.dumps({"host": "elsewhere", "pid": 1, "since": 0}))
    os.utime(run / LOCK_FILE, (old, old))
    make(tmp_path, "optim.max_updates=2").fit()


def test_a_lock_of_a_pid_now_given_to_another_process_is_stale(tmp_path: Path) -> None:
    import json
    import socket

    from f5lite.storage.lock import RunLock, RunLockError, process_start

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"host": socket.gethostname(), "pid": holder.pid, "start": process_start(holder.pid), "since": 0}
        (tmp_path / LOCK_FILE).write_text(json.dumps(lock))
        with pytest.raises(RunLockError, match=rf"in use by pid {holder.pid}"):
            RunLock(tmp_path).acquire()
        # The same pid, but another process: the one that wrote the lock is gone (a restart gave its pid away).
        (tmp_path / LOCK_FILE).write_text(json.dumps({**lock, "start": "another-boot:1"}))
        taken = RunLock(tmp_path)
        taken.acquire()
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid() and taken.held
        taken.release()
    finally:
        holder.kill()
        holder.wait()


def permuted(data: Path, root: Path, extra_token: str | None = None) -> Path:
    """A copy of `data` whose vocab has its first two tokens after the space swapped (or one token more)."""
    root.mkdir()
    shutil.copyfile(data / "cuts.jsonl.gz", root / "cuts.jsonl.gz")
    tokens = (data / "vocab.txt").read_text(encoding="utf-8").splitlines()
    if extra_token is None:
        tokens[1], tokens[2] = tokens[2], tokens[1]
    else:
        tokens.append(extra_token)
    (root / "vocab.txt").write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    return root


@pytest.mark.heavy
@pytest.mark.parametrize("extra_token", [None, "ß"], ids=["same size, another order", "another size"])
def test_a_relaunch_with_another_vocab_is_refused_and_leaves_the_run_dir_as_it_was(
    tmp_path: Path, data: Path, extra_token: str | None
) -> None:
    run = tmp_path / "run"
    make(tmp_path, f"data.dir={data}", "optim.max_updates=2", "ckpt.every=1").fit()
    before = file_digests(run)
    other = permuted(data, tmp_path / "other", extra_token)
    cmd = [sys.executable, "-m", "f5lite.train", *BASE, f"run_dir={run}", f"data.dir={other}", "optim.max_updates=4"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    how = "another order" if extra_token is None else "other tokens"
    assert "was trained with another vocab" in proc.stderr and how in proc.stderr
    assert file_digests(run) == before  # not a byte changed: config.yaml, vocab.txt, checkpoints


def test_a_relaunch_with_other_batching_is_refused_before_any_file_changes(tmp_path: Path, data: Path) -> None:
    run = tmp_path / "run"
    make(tmp_path, f"data.dir={data}", "optim.max_updates=2", "ckpt.every=1").fit()
    before = file_digests(run)
    with pytest.raises(ValueError, match="cannot resume the batch sampler: its settings changed"):
        make(tmp_path, f"data.dir={data}", "data.frames_per_gpu=3000", "optim.max_updates=4")
    assert file_digests(run) == before


@pytest.mark.parametrize("kind", [DistributedType.FSDP, DistributedType.DEEPSPEED, DistributedType.MEGATRON_LM])
def test_sharded_accelerate_modes_are_refused_at_start(tmp_path: Path, kind: DistributedType) -> None:
    from f5lite.config import compose_config

    cfg = compose_config([*BASE, f"run_dir={tmp_path / 'run'}"])
    with pytest.raises(ValueError, match=rf"distributed type {kind.value} is not supported .*launch with DDP"):
        Trainer(cfg, accelerator=SimpleNamespace(distributed_type=kind))  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


def test_fp16_gradient_overflow_is_not_a_bad_update() -> None:
    finite, overflow, nan_loss = (torch.tensor(v) for v in (True, False, False))
    yes, no = torch.tensor(True), torch.tensor(False)
    # fp32 / bf16 (no scaler): any skipped update is bad.
    assert bad_update(yes, overflow, grad_scaler=False) and not bad_update(yes, finite, grad_scaler=False)
    # fp16: the scaler's overflow (finite loss, non-finite gradients) is routine; a non-finite loss is not.
    assert not bad_update(yes, overflow, grad_scaler=True)
    assert bad_update(no, nan_loss, grad_scaler=True)

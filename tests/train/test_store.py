"""Checkpoint store: atomic commits, verification, rotation, async errors, and SIGKILL during async saves."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from f5lite.storage.store import CheckpointSaveError, CheckpointStore
from f5lite.storage.tree import flatten, unflatten


def groups(step: int) -> dict[str, dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(step)
    return {"model": {"w": torch.randn(64, 64, generator=g)}, "ema": {"w": torch.full((3,), float(step))}}


@pytest.mark.parametrize("async_save", [False, True])
def test_save_load_rotate(tmp_path: Path, async_save: bool) -> None:
    store = CheckpointStore(tmp_path, keep_last=2, async_save=async_save)
    for step in (1, 2, 3):
        store.save(step, groups(step), {"update": step})
    store.close()
    assert [p.name for p in store.committed()] == ["step-00000002", "step-00000003"]
    assert (tmp_path / "latest").read_text().strip() == "step-00000003"
    ckpt = CheckpointStore(tmp_path, writer=False).load_latest()
    assert ckpt is not None and ckpt.step == 3 and ckpt.meta["update"] == 3
    assert torch.equal(ckpt.tensors["model"]["w"], groups(3)["model"]["w"])


def test_damaged_checkpoint_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = CheckpointStore(tmp_path, keep_last=0)
    store.save(1, groups(1), {})
    store.save(2, groups(2), {})
    weights = tmp_path / "step-00000002" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF  # one flipped bit in the tensor data: only the checksum can tell
    weights.write_bytes(bytes(data))
    ckpt = CheckpointStore(tmp_path, writer=False).load_latest()
    assert ckpt is not None and ckpt.step == 1
    assert "skipping damaged checkpoint" in caplog.text and "fails its checksum" in caplog.text
    with pytest.raises(ValueError, match="is damaged: model.safetensors fails its checksum"):
        store.load_step(2)
    with pytest.raises(ValueError, match=r"no checkpoint of update 7 .*have: 1, 2"):
        store.load_step(7)


def test_unfinished_save_is_ignored_and_removed(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save(1, groups(1), {})
    partial = tmp_path / "step-00000002.tmp"
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"half")
    assert CheckpointStore(tmp_path, writer=False).load_latest().step == 1  # type: ignore[union-attr]
    CheckpointStore(tmp_path)  # opening writes nothing: the run may still be refused
    assert partial.exists()
    CheckpointStore(tmp_path).tidy()  # the next run tidies up once it starts
    assert not partial.exists()


def test_async_error_surfaces_at_next_save_and_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import f5lite.storage.store as store_module

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    store = CheckpointStore(tmp_path, async_save=True)
    monkeypatch.setattr(store_module, "write_safetensors", disk_full)
    store.save(1, groups(1), {})  # returns at once
    with pytest.raises(CheckpointSaveError, match="could not write checkpoint 1 .*No space left"):
        store.save(2, groups(2), {})
    store.save(3, groups(3), {})
    with pytest.raises(CheckpointSaveError, match="checkpoint 3"):
        store.close()
    assert store.committed() == []


def test_async_snapshot_is_taken_before_save_returns(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, async_save=True)
    tensors = groups(1)
    expected = tensors["model"]["w"].clone()
    store.save(1, tensors, {})
    tensors["model"]["w"].add_(1.0)  # the training step changes weights while the writer runs
    store.close()
    assert torch.equal(store.load_latest().tensors["model"]["w"], expected)  # type: ignore[union-attr]


def test_optimizer_state_round_trip() -> None:
    param = torch.nn.Parameter(torch.randn(4))
    opt = torch.optim.AdamW([param], lr=torch.tensor(0.1), betas=(0.8, 0.9))
    param.grad = torch.ones(4)
    opt.step()
    skeleton, tensors = flatten(opt.state_dict(), prefix="optimizer")
    assert set(tensors) == {
        "optimizer.state.0.step",
        "optimizer.state.0.exp_avg",
        "optimizer.state.0.exp_avg_sq",
        "optimizer.param_groups.0.lr",
    }
    restored = unflatten(json.loads(json.dumps(skeleton)), tensors)
    fresh = torch.optim.AdamW([param], lr=0.5)
    fresh.load_state_dict(restored)
    assert torch.equal(fresh.state[param]["exp_avg"], opt.state[param]["exp_avg"])
    assert fresh.param_groups[0]["betas"] == [0.8, 0.9]
    with pytest.raises(TypeError, match="cannot store a object"):
        flatten({"x": object()})


CHILD = """
import sys, torch
from f5lite.storage.store import CheckpointStore
store = CheckpointStore(sys.argv[1], keep_last=2, async_save=True)
last = store.load_latest()
step = 0 if last is None else last.step  # a restarted run resumes
print("ready", flush=True)
while True:
    step += 1
    store.save(step, {"model": {"w": torch.full((256, 1024), float(step))}}, {"update": step})
"""


# Each trial starts a Python with torch (about 3 s on 2 cores): 4 in `make test`, 16 in `make test-slow`.
@pytest.mark.parametrize(
    ("trials", "seed"), [pytest.param(4, 0, id="few"), pytest.param(16, 1, id="many", marks=pytest.mark.slow)]
)
@pytest.mark.heavy
def test_sigkill_during_async_saves_never_leaves_a_partial_latest(tmp_path: Path, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    root = tmp_path / "ckpt"
    last_step = 0
    for trial in range(trials):
        child = subprocess.Popen([sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        latest = root / "latest"
        if latest.exists():
            pointed = root / latest.read_text().strip()
            assert (pointed / "manifest.json").is_file(), f"trial {trial}: latest points at {pointed}"
        restarted = CheckpointStore(root)
        restarted.tidy()  # as a restarted run does
        ckpt = restarted.load_latest()
        if ckpt is not None:
            assert torch.equal(ckpt.tensors["model"]["w"], torch.full((256, 1024), float(ckpt.step)))
            last_step = max(last_step, ckpt.step)
        assert not list(root.glob("*.tmp"))
    assert last_step > 0


def test_files_are_hashed_as_they_are_written(tmp_path: Path) -> None:
    from f5lite.storage.safetensors_stream import write_safetensors

    tensors = {
        "f32": torch.randn(3, 5),
        "bf16": torch.randn(7).to(torch.bfloat16),
        "scalar": torch.tensor(3, dtype=torch.int64),
        "flag": torch.tensor([True, False]),
        "empty": torch.zeros(0, 4, dtype=torch.float16),
        "strided": torch.arange(12.0).reshape(3, 4).t(),
    }
    size, digest = write_safetensors(tmp_path / "x.safetensors", tensors, {"k": "v"})
    data = (tmp_path / "x.safetensors").read_bytes()
    assert size == len(data) and digest == hashlib.sha256(data).hexdigest()
    loaded = load_file(tmp_path / "x.safetensors")
    assert loaded.keys() == tensors.keys()
    for key, value in tensors.items():
        assert loaded[key].dtype == value.dtype and torch.equal(loaded[key], value), key
    with pytest.raises(ValueError, match="dtype torch.complex64"):
        write_safetensors(tmp_path / "y.safetensors", {"c": torch.zeros(2, dtype=torch.complex64)})

    store = CheckpointStore(tmp_path / "ckpt")
    store.save(1, groups(1), {"update": 1})
    manifest = json.loads((tmp_path / "ckpt" / "step-00000001" / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        written = (tmp_path / "ckpt" / "step-00000001" / name).read_bytes()
        assert entry == {"bytes": len(written), "sha256": hashlib.sha256(written).hexdigest()}, name


def test_a_bounded_wait_and_no_second_write_of_a_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import f5lite.storage.store as store_module

    release = threading.Event()
    real = store_module.write_safetensors
    calls = []

    def slow(*args: object, **kwargs: object) -> tuple[int, str]:
        calls.append(args[0])
        release.wait(10)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store_module, "write_safetensors", slow)
    store = CheckpointStore(tmp_path, async_save=False)
    assert store.save(1, groups(1), {}, timeout=0.2) is False  # still writing: the caller can give up in time
    assert store.wait(timeout=0.1) is False
    release.set()
    assert store.wait(timeout=10) is True and store.committed()[-1].name == "step-00000001"
    before = len(calls)
    assert store.save(1, groups(1), {}) is True  # the same step again (a stop right after a periodic save)
    assert len(calls) == before
    store.close()

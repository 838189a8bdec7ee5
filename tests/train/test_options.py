"""Optimizations and accumulation switched on through the trainer's own set-up, for every backbone family.

Each test compares two runs that differ in one setting only and checks an observable of that setting: bytes saved
for backward (activation checkpointing), graphs handed to the compiler (compile), and the gradient of the mean of
the micro-batch losses (accumulation), besides the numbers staying the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make

import f5lite.train.setup as train_setup
from f5lite.data.collate import MEL_PAD_VALUE
from f5lite.train.seeding import seed_step
from f5lite.train.trainer import Trainer


def gradients(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in trainer.network.named_parameters() if p.grad is not None}


def saved_bytes_and_grads(trainer: Trainer, batch) -> tuple[int, dict[str, torch.Tensor], float]:
    """One forward and backward through the trainer, counting the bytes autograd keeps for the backward."""
    saved = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = trainer.forward_backward([batch])
    return saved, gradients(trainer), loss.item()


@pytest.mark.parametrize("family", ["dit", "mmdit", "unett"])
def test_activation_checkpointing_through_the_trainer(tmp_path: Path, family: str) -> None:
    """perf.ac changes what is kept for backward and nothing else: the same loss and gradients, bit for bit."""
    runs = {
        mode: make(tmp_path, f"perf.ac.mode={mode}", name=mode, family=family) for mode in ("none", "full", "selective")
    }  # dropout 0.1 in all: checkpointing must replay the same masks
    batch = next(iter(runs["none"].data.loader))
    results = {mode: saved_bytes_and_grads(trainer, batch) for mode, trainer in runs.items()}
    plain_bytes, plain_grads, plain_loss = results["none"]
    for mode in ("full", "selective"):
        saved, grads, loss = results[mode]
        assert loss == plain_loss, mode
        assert grads.keys() == plain_grads.keys()
        for name, grad in grads.items():
            torch.testing.assert_close(grad, plain_grads[name], rtol=0, atol=0, msg=f"{mode}: {name}")
    assert results["full"][0] < results["selective"][0] < plain_bytes
    every_2nd = make(tmp_path, "perf.ac.mode=full", "perf.ac.every_n=2", name="every2", family=family)
    assert results["full"][0] < saved_bytes_and_grads(every_2nd, batch)[0] < plain_bytes


@pytest.fixture
def compiled_graphs(monkeypatch: pytest.MonkeyPatch) -> list[torch.fx.GraphModule]:
    """Route the trainer's per-block compile through aot_eager and record every graph the compiler receives."""
    graphs: list[torch.fx.GraphModule] = []
    aot_eager = torch._dynamo.lookup_backend("aot_eager")

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    real = train_setup.apply_compile
    monkeypatch.setattr(train_setup, "apply_compile", lambda m, **kw: real(m, **{**kw, "backend": counting}))
    torch._dynamo.reset()
    yield graphs
    torch._dynamo.reset()


@pytest.mark.parametrize("family", ["dit", "unett"])
def test_compile_through_the_trainer(tmp_path: Path, family: str, compiled_graphs: list) -> None:
    # torch's dropout on both sides (compiled blocks keep it; eager on a CPU would take the cheap-mask kernel).
    eager = make(tmp_path, "perf.dropout=torch", name="eager", family=family)
    batch = next(iter(eager.data.loader))
    _, eager_grads, eager_loss = saved_bytes_and_grads(eager, batch)
    assert compiled_graphs == []
    compiled = make(tmp_path, "perf.compile=true", name="compiled", family=family)
    _, grads, loss = saved_bytes_and_grads(compiled, batch)
    assert len(compiled_graphs) >= 1  # the blocks went through the compiler
    assert all(b._compiled_call_impl is not None for b in compiled.network.blocks)
    assert all(not k.startswith("_orig_mod") and "._orig_mod." not in k for k in compiled.network.state_dict())
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    for name, grad in grads.items():  # aot_eager runs the same kernels; only the op order may differ
        scale = eager_grads[name].norm().item() + 1e-12
        assert (grad - eager_grads[name]).norm().item() <= 1e-5 * scale, name
    graphs_after_first = len(compiled_graphs)
    compiled.forward_backward([batch])  # a batch of a shape already seen is not compiled again
    assert len(compiled_graphs) == graphs_after_first


def test_accumulation_averages_the_micro_batch_gradients(tmp_path: Path) -> None:
    """k micro-batches give the gradient of the mean of their losses (each a mean over its span frames)."""
    accumulated = make(tmp_path, "optim.grad_accum=2", "model.dropout=0", name="accum")
    loader = iter(accumulated.data.loader)
    batches = [next(loader), next(loader)]
    loss = accumulated.forward_backward(batches)
    grads = gradients(accumulated)

    reference = make(tmp_path, "model.dropout=0", name="reference")  # same weights (same seed)
    per_micro, losses = [], []
    for micro, batch in enumerate(batches):
        generator = seed_step(reference.seed, 0, 0, micro, reference.device)  # the draws the trainer makes
        reference.network.zero_grad(set_to_none=True)
        micro_loss = reference.model(batch.mel, batch.text_ids, batch.mel_lengths, generator=generator)
        micro_loss.backward()
        per_micro.append(gradients(reference))
        losses.append(micro_loss.item())
    assert loss.item() == pytest.approx(sum(losses) / 2, rel=1e-6)
    assert grads.keys() == per_micro[0].keys()
    for name, grad in grads.items():
        mean = (per_micro[0][name] + per_micro[1][name]) / 2
        assert (grad - mean).norm().item() <= 1e-6 * (mean.norm().item() + 1e-12), name


def test_packing_through_the_trainer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """perf.pack keeps the loss and gradients (fp32, within rounding) and saves no activations for padded frames."""
    same = ("model.attn_mask_enabled=true", "model.dropout=0")  # dropout draws depend on the layout
    padded = make(tmp_path, *same, name="padded")
    with caplog.at_level("INFO", logger="f5lite"):
        packed = make(tmp_path, *same, "perf.pack=true", name="packed")
    batch = next(iter(padded.data.loader))
    # The loader's batches are of like lengths (little padding: 4% here); cut every other utterance to a third, as
    # an unsorted batch would have it, so that the padded step spends much of its work on padding.
    batch.mel_lengths[::2] //= 3
    keep = torch.arange(batch.mel.shape[1])[None, :] < batch.mel_lengths[:, None]
    batch.mel.masked_fill_(~keep[..., None], MEL_PAD_VALUE)
    padded_bytes, padded_grads, padded_loss = saved_bytes_and_grads(padded, batch)
    packed_bytes, packed_grads, packed_loss = saved_bytes_and_grads(packed, batch)
    # fp32 sums in another order (tests/models/test_packing.py measures and bounds it).
    assert packed_loss == pytest.approx(padded_loss, rel=1e-5)
    for name, grad in padded_grads.items():
        torch.testing.assert_close(packed_grads[name], grad, rtol=1e-5, atol=1e-5 * grad.abs().max().item())
    assert packed_bytes < padded_bytes
    assert "perf.pack: attention in the padded layout (SDPA, padded keys masked) on cpu" in caplog.text

"""Activation checkpointing: same numbers, fewer saved bytes (monotone in every_n), unchanged keys."""

from __future__ import annotations

import pytest
import torch
from support.tiny_models import tiny_backbone, tiny_batch

import f5lite
from f5lite.models import AC_MODES

BACKBONES = ("dit", "mmdit", "unett")


def step(model: torch.nn.Module, seed: int = 0) -> tuple[float, dict[str, torch.Tensor], int]:
    """Loss, gradients and the bytes autograd saved for backward in one training step."""
    saved = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += t.numel() * t.element_size()
        return t

    batch = tiny_batch()
    torch.manual_seed(seed)
    model.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"]).pow(2).mean()
    loss.backward()
    return loss.item(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}, saved


@pytest.mark.parametrize("name", BACKBONES)
@pytest.mark.parametrize("mode", ["full", "selective"])
def test_same_loss_and_gradients_fewer_saved_bytes(name: str, mode: str) -> None:
    model = tiny_backbone(name)
    keys = list(model.state_dict())
    loss0, grads0, bytes0 = step(model)

    saved = {}
    for every_n in (1, 2, 4):
        assert f5lite.apply_ac(model, mode, every_n) == list(range(0, len(model.blocks), every_n))
        loss, grads, saved[every_n] = step(model)
        assert loss == loss0
        assert grads.keys() == grads0.keys()
        for key, grad in grads.items():
            torch.testing.assert_close(grad, grads0[key], rtol=0, atol=0, msg=key)
        assert list(model.state_dict()) == keys
        assert [n for n, _ in model.named_parameters()] == [n for n, _ in tiny_backbone(name).named_parameters()]
    assert saved[1] < saved[2] < saved[4] < bytes0

    assert f5lite.apply_ac(model, "none") == []
    assert step(model)[2] == bytes0


def test_selective_keeps_more_than_full() -> None:
    """Selective AC keeps matmul/attention outputs, so it saves more than full AC and less than none."""
    model = tiny_backbone("dit")
    f5lite.apply_ac(model, "full", 1)
    full = step(model)[2]
    f5lite.apply_ac(model, "selective", 1)
    selective = step(model)[2]
    f5lite.apply_ac(model, "none")
    assert full < selective < step(model)[2]


@pytest.mark.parametrize("mode", ["full", "selective"])
def test_dropout_is_replayed_in_recomputation(mode: str) -> None:
    """With dropout on, the recomputed forward uses the same masks: gradients equal those without AC."""
    model = tiny_backbone("dit", dropout=0.3).train()
    _, grads0, _ = step(model, seed=3)
    f5lite.apply_ac(model, mode, 1)
    _, grads, _ = step(model, seed=3)
    for key, grad in grads.items():
        torch.testing.assert_close(grad, grads0[key], rtol=0, atol=0, msg=key)


def test_wrapped_blocks_survive_deepcopy() -> None:
    """EMA copies the model with deepcopy; the copy must checkpoint its own blocks, not the original's."""
    import copy

    model = tiny_backbone("unett")
    f5lite.apply_ac(model, "full", 1)
    clone = copy.deepcopy(model)
    loss_ref = step(model)[0]
    with torch.no_grad():
        for param in model.blocks.parameters():
            param.zero_()
    loss_clone, grads, saved = step(clone)
    assert loss_clone == loss_ref
    assert grads.keys() == dict(clone.named_parameters()).keys()
    assert saved == step(model)[2]


@pytest.mark.parametrize(("mode", "every_n", "message"), [("some", 1, "perf.ac.mode='some'"), ("full", 0, "every_n")])
def test_bad_arguments(mode: str, every_n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        f5lite.apply_ac(tiny_backbone("dit"), mode, every_n)
    assert set(AC_MODES) == {"none", "full", "selective"}

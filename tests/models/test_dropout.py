"""The cheap-mask dropout kernel (`f5lite.models.dropout`) and its application from outside the backbone."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from f5lite.config import compose_config
from f5lite.models import apply_ac, apply_dropout, build_backbone, resolve_dropout_kernel
from f5lite.models.dropout import BitsDropout, dropout_threshold, keep_mask
from f5lite.train.setup import build_model

TINY = {"dim": 32, "depth": 2, "heads": 2, "dim_head": 16, "ff_mult": 2, "text_dim": 16, "conv_layers": 1}


def test_threshold_and_scale_follow_from_p_rounded_to_16_bits() -> None:
    # 0.1 of 65,536 levels is 6553.6: 6,554 levels are dropped, 58,982 kept.
    threshold, scale = dropout_threshold(0.1)
    assert threshold == 6554 - 32768
    assert scale == 65536 / 58982
    assert dropout_threshold(0.0) == (-32768, 1.0)  # nothing below the smallest lane value: nothing dropped


def test_every_lane_of_a_random_word_drops_at_rate_p() -> None:
    # Four masks come from each 64-bit word; a lane whose bits are not uniform would drop at another rate.
    torch.manual_seed(0)
    p, n = 0.1, 1 << 22
    dropped = ~keep_mask(torch.Size([n]), p, torch.device("cpu"))
    rounded = round(p * 65536) / 65536
    sigma = math.sqrt(rounded * (1 - rounded) / (n // 4))
    for lane, rate in enumerate(dropped.view(-1, 4).float().mean(dim=0).tolist()):
        assert abs(rate - rounded) < 6 * sigma, f"lane {lane} drops {rate:.5f}, not {rounded:.5f}"


def test_forward_scales_kept_values_and_zeroes_the_rest() -> None:
    torch.manual_seed(1)
    x = torch.randn(3, 50, 40) + 3.0  # away from 0, so a zero output means dropped
    out = BitsDropout(0.25).train()(x)
    kept = out != 0
    _, scale = dropout_threshold(0.25)
    assert 0.7 < kept.float().mean() < 0.8
    assert torch.equal(out[kept], x[kept] * scale)
    assert out.dtype == x.dtype and out.shape == x.shape


def test_backward_passes_gradient_only_through_kept_elements() -> None:
    torch.manual_seed(2)
    x = (torch.randn(4, 30, 16) + 3.0).requires_grad_()
    grad = torch.randn(4, 30, 16)
    out = BitsDropout(0.3).train()(x)
    out.backward(grad)
    _, scale = dropout_threshold(0.3)
    assert x.grad is not None
    assert torch.equal(x.grad, torch.where(out != 0, grad * scale, 0.0))


def test_bf16_input_keeps_its_dtype_and_gradient_dtype() -> None:
    x = torch.randn(2, 8, 8, dtype=torch.bfloat16, requires_grad=True)
    out = BitsDropout(0.1).train()(x)
    out.sum().backward()
    assert out.dtype == torch.bfloat16 and x.grad is not None and x.grad.dtype == torch.bfloat16


def test_identity_in_eval_mode_and_at_p_zero() -> None:
    x = torch.randn(2, 5, 8)
    assert BitsDropout(0.5).eval()(x) is x
    assert BitsDropout(0.0).train()(x) is x
    with pytest.raises(ValueError, match="p=1.0"):
        BitsDropout(1.0)


def test_masks_come_from_the_global_generator_that_the_trainer_reseeds() -> None:
    layer = BitsDropout(0.5).train()
    x = torch.ones(1000)
    torch.manual_seed(7)
    first = layer(x)
    torch.manual_seed(7)
    assert torch.equal(layer(x), first)
    torch.manual_seed(8)
    assert not torch.equal(layer(x), first)


def test_apply_swaps_every_dropout_without_changing_keys_or_eval_outputs() -> None:
    torch.manual_seed(0)
    model = build_backbone("dit", **TINY, text_num_embeds=10, mel_dim=8)
    keys = list(model.state_dict())
    x, cond = torch.randn(2, 12, 8), torch.randn(2, 12, 8)
    text, time = torch.randint(0, 10, (2, 5)), torch.rand(2)
    model.eval()
    before = model(x, cond, text, time)
    assert apply_dropout(model, "bits") == 2 * TINY["depth"]  # after attention and inside the feed-forward
    assert all(type(m) is not nn.Dropout for m in model.modules())
    assert list(model.state_dict()) == keys
    assert torch.equal(model(x, cond, text, time), before)
    assert all(not m.training for m in model.modules())  # the swapped layers keep the model's mode
    assert apply_dropout(model, "torch") == 2 * TINY["depth"]
    assert not any(isinstance(m, BitsDropout) for m in model.modules())
    with pytest.raises(ValueError, match="resolve 'auto' first"):
        apply_dropout(model, "auto")


def test_activation_checkpointing_replays_the_same_masks() -> None:
    # Checkpointing recomputes each block's forward in backward; a different mask there gives wrong gradients.
    def grads(ac: str) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = build_backbone("dit", **{**TINY, "dim": 64}, text_num_embeds=10, mel_dim=8, dropout=0.5)
        apply_dropout(model, "bits")
        apply_ac(model, ac, 1)
        model.train()
        g = torch.Generator().manual_seed(3)
        x, cond = torch.randn(2, 12, 8, generator=g), torch.randn(2, 12, 8, generator=g)
        text, time = torch.randint(0, 10, (2, 5), generator=g), torch.rand(2, generator=g)
        torch.manual_seed(5)
        model(x, cond, text, time).square().mean().backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    plain = grads("none")
    for mode in ("full", "selective"):
        assert all(torch.equal(a, b) for a, b in zip(grads(mode), plain, strict=True)), mode


def test_auto_is_bits_on_a_cpu_without_compile_only() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_dropout_kernel("auto", cpu, compiled=False) == "bits"
    assert resolve_dropout_kernel("auto", cpu, compiled=True) == "torch"
    assert resolve_dropout_kernel("auto", cuda, compiled=False) == "torch"
    assert resolve_dropout_kernel("torch", cpu, compiled=False) == "torch"
    with pytest.raises(ValueError, match="perf.dropout='fast'"):
        resolve_dropout_kernel("fast", cpu, compiled=False)


def test_training_setup_uses_the_configured_kernel() -> None:
    size = [f"model.{k}={v}" for k, v in TINY.items()]
    for value, layer in (("auto", BitsDropout), ("bits", BitsDropout), ("torch", nn.Dropout)):
        cfg = compose_config(["+recipe=debug_tiny", *size, f"perf.dropout={value}"])
        backbone = build_model(cfg, 10, None, torch.device("cpu"), with_ema=False).backbone
        kinds = {type(m) for m in backbone.modules() if isinstance(m, (nn.Dropout, BitsDropout))}
        assert kinds == {layer}, value


def test_bad_dropout_settings_name_the_key() -> None:
    with pytest.raises(ValueError, match="perf.dropout='fast'"):
        compose_config(["+recipe=debug_tiny", "perf.dropout=fast"])
    with pytest.raises(ValueError, match="perf.dropout=bits with perf.compile=true"):
        compose_config(["+recipe=debug_tiny", "perf.dropout=bits", "perf.compile=true"])

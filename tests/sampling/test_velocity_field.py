"""`velocity_field`, the one velocity: the sampler steps it, and the distillation target takes two steps
of it, with a guidance scale per sample as well as one number."""

from __future__ import annotations

import pytest
import torch
from support.tiny_models import tiny_backbone, tiny_batch

from f5lite.sampling.distill import two_step_target
from f5lite.sampling.guidance import velocity_field
from f5lite.sampling.ode import solve


def bound(*values: torch.Tensor, ulps: float = 64) -> float:
    """An absolute tolerance for float32 results of these magnitudes: `ulps` float32 epsilons of the largest."""
    return ulps * torch.finfo(torch.float32).eps * max(float(v.detach().abs().max()) for v in values)


@pytest.mark.parametrize("zero_star", [False, True])
def test_per_sample_guidance_and_times_are_each_row_s_own_number(zero_star: bool) -> None:
    model = tiny_backbone("dit").eval()
    b = tiny_batch()
    x, cond, text, mask = b["x"], b["cond"], b["text"], b["mask"]
    times, scales = torch.tensor([0.2, 0.7]), torch.tensor([0.5, 2.0])
    with torch.no_grad():
        v = velocity_field(model, cond, text, mask, scales, zero_star)(times, x)
        for i in range(2):
            rows = slice(i, i + 1)
            field = velocity_field(model, cond[rows], text[rows], mask[rows], float(scales[i]), zero_star)
            alone = field(times[i], x[rows])
            assert (v[rows] - alone).abs().max() <= bound(alone)


def test_the_target_takes_the_sampler_s_two_guided_half_steps_per_sample() -> None:
    teacher = tiny_backbone("mmdit").eval()
    b = tiny_batch()
    x, cond, text, mask = b["x"], b["cond"], b["text"], b["mask"]
    times, steps, scales = torch.tensor([0.1, 0.6]), torch.tensor([0.5, 0.25]), torch.tensor([1.0, 3.0])
    target = two_step_target(teacher, x, cond, text, times, steps, scales, mask)
    for i in range(2):
        rows = slice(i, i + 1)
        t, d = float(times[i]), float(steps[i])
        with torch.no_grad():
            field = velocity_field(teacher, cond[rows], text[rows], mask[rows], float(scales[i]))
            end = solve(field, x[rows], torch.tensor([t, t + d / 2, t + d]), "euler")
        expected = (end - x[rows]) / d
        assert (target[rows] - expected).abs().max() <= bound(expected, ulps=256)


def test_guidance_zero_is_one_conditional_call_and_a_tensor_always_guides() -> None:
    model = tiny_backbone("unett").eval()
    b = tiny_batch()
    batches: list[int] = []
    model.register_forward_hook(lambda module, args, out: batches.append(args[0].shape[0]))
    with torch.no_grad():
        conditional = velocity_field(model, b["cond"], b["text"], b["mask"], 0.0)(b["time"], b["x"])
        zeros = velocity_field(model, b["cond"], b["text"], b["mask"], torch.zeros(2))(b["time"], b["x"])
        plain = model(b["x"], b["cond"], b["text"], b["time"], b["mask"])
    assert batches == [2, 4, 2]
    assert torch.equal(conditional, plain)
    assert (zeros - plain).abs().max() <= bound(plain)

"""The flow-distillation target: where a guided teacher gets in two Euler steps, as the velocity of one step.

For a state `x` at flow time `t`, a step size `d` and a guidance scale `w` (each per sample), the teacher takes two
Euler steps of `d / 2` with the sampler's velocity (`f5lite.sampling.guidance.velocity_field`: F5-TTS's
classifier-free guidance `v = v_cond + w (v_cond - v_uncond)`, the unconditional pass dropping audio and text,
batched with the conditional one) through the sampler's stepping loop (`f5lite.sampling.ode.solve`, each sample on
its own grid) and reaches `x_end`. The student, which takes one step of `d` with `w` as an input, is trained towards
`(x_end - x) / d` (ZipVoice-Distill's stage-one target; stage two puts an average of the student in the teacher's
place, which then steps as a student does).
"""

from __future__ import annotations

import torch
from torch import Tensor

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.guidance import velocity_field
from f5lite.sampling.ode import solve


@torch.no_grad()
def two_step_target(
    teacher: Backbone,
    x: Tensor,
    cond: Tensor,
    text: Tensor,
    time: Tensor,
    step: Tensor,
    guidance: Tensor,
    mask: Tensor | None = None,
) -> Tensor:
    """The velocity of one step that lands where two guided Euler half steps of the teacher land.

    Args:
        teacher: a flow model (`DiT`, `MMDiT`, `UNetT`), guided by a second pass; or a distilled student, then
            unguided: it takes the step size and `guidance` itself.
        x: state `[b, n, mel]` at `time`.
        cond: audio condition `[b, n, mel]`, zero where generated.
        text: ids `[b, nt]` padded with -1.
        time: flow time `[b]`.
        step: step size `d` `[b]`, with `time + step <= 1`.
        guidance: guidance scale `w` `[b]`.
        mask: `[b, n]` bool real frames, or None.

    Returns:
        `(x_end - x) / d`, `[b, n, mel]` in `x`'s dtype.
    """
    grid = torch.stack((time, time + step / 2, time + step))  # [3, b]: each sample's own two half steps
    end = solve(velocity_field(teacher, cond, text, mask, guidance), x, grid, "euler")
    return (end - x) / step.view(-1, 1, 1).to(x.dtype)

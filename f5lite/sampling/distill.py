"""The flow-distillation target: where a guided teacher gets in two Euler steps, as the velocity of one step.

For a state `x` at flow time `t`, a step size `d` and a guidance scale `w` (each per sample), the teacher takes two
Euler steps of `d / 2` with the sampler's guided velocity (`f5lite.sampling.guidance.guided_field`: F5-TTS's
classifier-free guidance `v = v_cond + w (v_cond - v_uncond)`, the unconditional pass dropping audio and text,
batched with the conditional one) and reaches `x_end`. The student, which takes one step of `d` with `w` as an input,
is trained towards `(x_end - x) / d` (ZipVoice-Distill's stage-one target; stage two puts an average of the student
in the teacher's place).
"""

from __future__ import annotations

import torch
from torch import Tensor

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.guidance import guided_field
from f5lite.sampling.ode import VelocityField


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
            unguided: it takes `step` and `guidance` itself.
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
    half = (step / 2).view(-1, 1, 1).to(x.dtype)
    if teacher.distilled:
        velocity = _student_field(teacher, cond, text, mask, step / 2, guidance)
    else:
        velocity = guided_field(teacher, cond, text, mask, guidance)
    middle = x + half * velocity(time, x)
    end = middle + half * velocity(time + step / 2, middle)
    return (end - x) / step.view(-1, 1, 1).to(x.dtype)


def _student_field(
    student: Backbone, cond: Tensor, text: Tensor, mask: Tensor | None, step: Tensor, guidance: Tensor
) -> VelocityField:
    """A distilled student's velocity for steps of `step` `[b]` at `guidance` `[b]`, as a function of `(t, x)`."""
    dtype = next(student.parameters()).dtype
    cond_in = cond.to(dtype)
    text_embed = student.embed_text(text, cond.shape[1], mask, False)

    def velocity(t: Tensor, x: Tensor) -> Tensor:
        v = student(
            x.to(dtype), cond_in, text, t.to(dtype), mask, False, False, text_embed=text_embed, step=step,
            guidance=guidance,
        )  # fmt: skip
        return v.to(x.dtype)

    return velocity

"""The flow-distillation target: where a guided teacher gets in two Euler steps, as the velocity of one step.

For a state `x` at flow time `t`, a step size `d` and a guidance scale `w` (each per sample), the teacher takes two
Euler steps of `d / 2` with F5-TTS's classifier-free guidance, `v = v_cond + w (v_cond - v_uncond)` (the
unconditional pass drops audio and text, batched with the conditional one as the sampler does), and reaches
`x_end`. The student, which takes one step of `d` with `w` as an input, is trained towards `(x_end - x) / d`
(ZipVoice-Distill's stage-one target; stage two puts an average of the student in the teacher's place).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor


@torch.no_grad()
def two_step_target(
    teacher: Any,
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
        teacher: a backbone (`DiT`, `MMDiT`, `UNetT`; or a distilled student, then unguided: it takes `step` and
            `guidance` itself).
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
    b, n = x.shape[:2]
    dtype = next(cast(torch.nn.Module, teacher).parameters()).dtype
    half = (step / 2).view(-1, 1, 1).to(x.dtype)
    if getattr(teacher, "distilled", False):
        text_embed = teacher.embed_text(text, n, mask, False)

        def velocity(t: Tensor, state: Tensor) -> Tensor:
            v = teacher(
                state.to(dtype), cond.to(dtype), text, t.to(dtype), mask, False, False, text_embed=text_embed,
                step=step / 2, guidance=guidance,
            )  # fmt: skip
            return cast(Tensor, v).to(x.dtype)
    else:
        drop = torch.arange(2 * b, device=x.device) >= b
        cond2, text2 = cond.to(dtype).repeat(2, 1, 1), text.repeat(2, 1)
        mask2 = None if mask is None else mask.repeat(2, 1)
        text_embed2 = teacher.embed_text(text2, n, mask2, drop)
        w = guidance.view(-1, 1, 1).to(x.dtype)

        def velocity(t: Tensor, state: Tensor) -> Tensor:
            v = teacher(
                state.to(dtype).repeat(2, 1, 1), cond2, text2, t.to(dtype).repeat(2), mask2, drop, drop,
                text_embed=text_embed2,
            )  # fmt: skip
            v_cond, v_uncond = cast(Tensor, v).to(x.dtype).chunk(2)
            return v_cond + w * (v_cond - v_uncond)

    middle = x + half * velocity(time, x)
    end = middle + half * velocity(time + step / 2, middle)
    return (end - x) / step.view(-1, 1, 1).to(x.dtype)

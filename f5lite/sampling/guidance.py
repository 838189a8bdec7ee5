"""`velocity_field`, the one velocity of a backbone: conditional, guided (F5-TTS's CFG, CFG-Zero*) or a student's.

F5-TTS guides with `v = v_c + cfg * (v_c - v_u)`, which is the usual `v_u + w (v_c - v_u)` with `w = 1 + cfg`.
CFG-Zero* (arXiv 2503.18886) rescales the unconditional velocity by the per-sample least-squares factor
`s* = <v_c, v_u> / ||v_u||^2`, giving the paper's `s* v_u + w (v_c - s* v_u)`; in F5-TTS's convention that is
`v_c + cfg * (v_c - s* v_u)`, so `s* = 1` is exactly plain CFG. (The public F5-TTS patch plugs `cfg` in as `w`,
which weakens guidance from w = 3 to w = 2 at the default strength: the reason for this module's tests.)

`velocity_field` is a backbone's velocity as the sampler evaluates it: a flow model's guided one, with the
unconditional pass batched with the conditional one (or the conditional pass alone without guidance), and a distilled
student's, which takes the step size and the guidance as inputs and makes no second pass. The sampler steps it
(`f5lite.sampling.ode.solve`), GRPO's rollouts and losses are its (`f5lite.train.grpo`), and the distillation target
(`f5lite.sampling.distill`) takes two steps of it, so that what is trained is what the sampler computes.

Shapes: b batch, n frames, d mel channels, nt text ids.
"""

from __future__ import annotations

import torch
from torch import Tensor

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.ode import VelocityField

SCALE_EPS = 1e-8
"""Added to `||v_u||^2`, as in the CFG-Zero* reference code, so an all-zero `v_u` gives s* = 0, not NaN."""


def optimized_scale(v_cond: Tensor, v_uncond: Tensor, mask: Tensor | None = None) -> Tensor:
    """CFG-Zero*'s per-sample scale `s* = <v_c, v_u> / (||v_u||^2 + 1e-8)`, in float32.

    Args:
        v_cond: conditional velocity `[b, n, d]`.
        v_uncond: unconditional velocity `[b, n, d]`.
        mask: `[b, n]` bool, True for the frames that count (padded frames of a batch are left out); None counts
            every frame.

    Returns:
        float32 `[b]`.
    """
    v_c, v_u = v_cond.float(), v_uncond.float()
    if mask is not None:
        keep = mask[..., None].to(torch.float32)
        v_c, v_u = v_c * keep, v_u * keep
    dot = (v_c * v_u).sum(dim=(1, 2))
    norm = v_u.square().sum(dim=(1, 2))
    return dot / (norm + SCALE_EPS)


def guided_velocity(
    v_cond: Tensor, v_uncond: Tensor, cfg_strength: float | Tensor, scale: Tensor | None = None
) -> Tensor:
    """Combine conditional and unconditional velocities: `v_c + cfg * (v_c - s v_u)`.

    Args:
        v_cond: conditional velocity `[b, n, d]`.
        v_uncond: unconditional velocity `[b, n, d]`.
        cfg_strength: guidance strength `cfg` (F5-TTS's; `w = 1 + cfg`): one number, or one per sample `[b]`.
        scale: per-sample `s` `[b]` (from `optimized_scale`), or None for plain CFG (`s = 1`). A float32 scale
            (or a float32 `cfg_strength` tensor) makes the result float32 even for half-precision velocities.

    Returns:
        The guided velocity `[b, n, d]`.
    """
    if scale is not None:
        v_uncond = v_uncond * scale.view(-1, 1, 1)
    if isinstance(cfg_strength, Tensor):
        cfg_strength = cfg_strength.view(-1, 1, 1)
    return v_cond + (v_cond - v_uncond) * cfg_strength


def velocity_field(
    model: Backbone,
    cond: Tensor,
    text: Tensor,
    mask: Tensor | None,
    cfg_strength: float | Tensor,
    zero_star: bool = False,
) -> VelocityField:
    """A backbone's velocity as a function of `(t, x, dt)`, with the text conditioning computed once.

    A flow model is guided: each evaluation is one backbone call of batch `2b`, rows `[0, b)` conditional and
    `[b, 2b)` unconditional (audio and text dropped), combined by `guided_velocity`; a number `cfg_strength` of 0
    makes one conditional call of batch `b` instead. A distilled student makes one call of batch `b`, told the step
    size `dt` and `cfg_strength` as its guidance. The model's inputs are cast to the dtype of its parameters, the
    velocities are combined in the model's output dtype, and the result is cast to the state's dtype.

    Args:
        model: a flow model, or a distilled student (`model.distilled`).
        cond: audio condition `[b, n, d]`, zero where generated.
        text: ids `[b, nt]` padded with -1.
        mask: `[b, n]` bool, True = real frame, or None (then no mask is passed to the model).
        cfg_strength: guidance strength `cfg` (F5-TTS's; a student's guidance input): one number, or one per sample
            `[b]`.
        zero_star: CFG-Zero*: the unconditional velocity rescaled by `optimized_scale` over the frames of `mask`.

    Returns:
        `field(t, x, dt)`: the flow time `t` (0-d, or `[b]` per sample), the state `x` `[b, n, d]` and the step size
        `dt` (like `t`; a student's field needs it) to the velocity `[b, n, d]` in `x`'s dtype.

    Raises:
        ValueError: CFG-Zero* asked of a student, which makes no unconditional pass.
    """
    if model.distilled:
        if zero_star:
            raise ValueError("cfg_zero_star=true needs an unconditional pass, which a distilled model does not make")
        return _student_field(model, cond, text, mask, cfg_strength)
    if not isinstance(cfg_strength, Tensor) and cfg_strength == 0:
        return _conditional_field(model, cond, text, mask)
    dtype = next(model.parameters()).dtype
    b = cond.shape[0]
    # Rows [0, b) conditional, [b, 2b) unconditional (audio and text dropped), in one backbone call.
    drop = torch.arange(2 * b, device=cond.device) >= b
    cond2 = cond.to(dtype).repeat(2, 1, 1)
    text2 = text.repeat(2, 1)
    mask2 = None if mask is None else mask.repeat(2, 1)
    text_embed2 = model.embed_text(text2, cond.shape[1], mask2, drop)

    def guided(t: Tensor, x: Tensor, dt: Tensor | None = None) -> Tensor:
        t2 = t.to(dtype) if t.dim() == 0 else t.to(dtype).repeat(2)
        v = model(x.to(dtype).repeat(2, 1, 1), cond2, text2, t2, mask2, drop, drop, text_embed=text_embed2)
        v_cond, v_uncond = v[:b], v[b:]
        scale = optimized_scale(v_cond, v_uncond, mask) if zero_star else None
        return guided_velocity(v_cond, v_uncond, cfg_strength, scale).to(x.dtype)

    return guided


def _conditional_field(model: Backbone, cond: Tensor, text: Tensor, mask: Tensor | None) -> VelocityField:
    """`velocity_field` without guidance: one conditional call of batch `b` per evaluation."""
    dtype = next(model.parameters()).dtype
    cond_in = cond.to(dtype)
    text_embed = model.embed_text(text, cond.shape[1], mask, False)

    def conditional(t: Tensor, x: Tensor, dt: Tensor | None = None) -> Tensor:
        v = model(x.to(dtype), cond_in, text, t.to(dtype), mask, False, False, text_embed=text_embed)
        return v.to(x.dtype)

    return conditional


def _student_field(
    student: Backbone, cond: Tensor, text: Tensor, mask: Tensor | None, guidance: float | Tensor
) -> VelocityField:
    """A distilled student's velocity: one call per evaluation, told the step size and the guidance."""
    dtype = next(student.parameters()).dtype
    cond_in = cond.to(dtype)
    text_embed = student.embed_text(text, cond.shape[1], mask, False)

    def student_velocity(t: Tensor, x: Tensor, dt: Tensor | None = None) -> Tensor:
        if dt is None:
            raise ValueError("a distilled model's velocity is that of one step: give the step size dt")
        v = student(
            x.to(dtype), cond_in, text, t.to(dtype), mask, False, False, text_embed=text_embed, step=dt,
            guidance=guidance,
        )  # fmt: skip
        return v.to(x.dtype)

    return student_velocity

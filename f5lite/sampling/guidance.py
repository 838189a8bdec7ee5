"""Classifier-free guidance in F5-TTS's convention, and CFG-Zero*'s optimized scale.

F5-TTS guides with `v = v_c + cfg * (v_c - v_u)`, which is the usual `v_u + w (v_c - v_u)` with `w = 1 + cfg`.
CFG-Zero* (arXiv 2503.18886) rescales the unconditional velocity by the per-sample least-squares factor
`s* = <v_c, v_u> / ||v_u||^2`, giving the paper's `s* v_u + w (v_c - s* v_u)`; in F5-TTS's convention that is
`v_c + cfg * (v_c - s* v_u)`, so `s* = 1` is exactly plain CFG. (The public F5-TTS patch plugs `cfg` in as `w`,
which weakens guidance from w = 3 to w = 2 at the default strength: the reason for this module's tests.)

Shapes: b batch, n frames, d mel channels.
"""

from __future__ import annotations

import torch
from torch import Tensor

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


def guided_velocity(v_cond: Tensor, v_uncond: Tensor, cfg_strength: float, scale: Tensor | None = None) -> Tensor:
    """Combine conditional and unconditional velocities: `v_c + cfg * (v_c - s v_u)`.

    Args:
        v_cond: conditional velocity `[b, n, d]`.
        v_uncond: unconditional velocity `[b, n, d]`.
        cfg_strength: guidance strength `cfg` (F5-TTS's; `w = 1 + cfg`).
        scale: per-sample `s` `[b]` (from `optimized_scale`), or None for plain CFG (`s = 1`). A float32 scale
            makes the result float32 even for half-precision velocities.

    Returns:
        The guided velocity `[b, n, d]`.
    """
    if scale is not None:
        v_uncond = v_uncond * scale.view(-1, 1, 1)
    return v_cond + (v_cond - v_uncond) * cfg_strength

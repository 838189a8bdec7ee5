"""Rotary position embedding as F5-TTS uses it (x_transformers' `RotaryEmbedding`): interleaved pairs, fp32.

Shapes: b batch, h heads, n positions, dh head width.

Frequency k rotates channels 2k and 2k+1 of every head, `(a, b) -> (a cos - b sin, b cos + a sin)`. The inverse
frequencies are a persistent buffer (`rotary_embed.inv_freq`) because released checkpoints contain it.
"""

from __future__ import annotations

import torch
from torch import nn

Rope = tuple[torch.Tensor, torch.Tensor]
"""`(cos, sin)`, each `[n, dh]` float32, channels repeated per pair."""


class RotaryEmbedding(nn.Module):
    """Holds `inv_freq [dh/2]` and builds the `(cos, sin)` tables for a sequence length."""

    inv_freq: torch.Tensor

    def __init__(self, dim_head: int, base: float = 10000.0) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim_head, 2).float() / dim_head))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, n: int) -> Rope:
        """Tables for positions `0..n-1`.

        Args:
            n: sequence length.

        Returns:
            `(cos, sin)`, each `[n, dh]` float32.
        """
        pos = torch.arange(n, device=self.inv_freq.device, dtype=torch.float32)
        angles = torch.outer(pos, self.inv_freq.float()).repeat_interleave(2, dim=-1)
        return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, rope: Rope) -> torch.Tensor:
    """Rotate `x [b, h, n, dh]` by position, computing in float32 and returning `x`'s dtype.

    `(a, b) -> (a cos - b sin, b cos + a sin)` is computed as `x cos + swap(x) (-sin, sin)`: the sign moves onto the
    small `[n, dh]` table (`(-b) s` and `b (-s)` are the same float), and the swap of each pair is one `cat` whose
    backward is another, where negating and stacking cost two more passes over `x` each way.
    """
    cos, sin = rope
    xf = x.float()
    sin_pairs = sin.unflatten(-1, (-1, 2))
    signed_sin = torch.stack((-sin_pairs[..., 0], sin_pairs[..., 1]), dim=-1).flatten(-2)
    pairs = xf.unflatten(-1, (-1, 2))
    swapped = torch.cat((pairs[..., 1:], pairs[..., :1]), dim=-1).flatten(-2)
    # The contiguous operand first: the sum takes its layout, so queries and keys reach attention as contiguous
    # `[b, h, n, dh]` tensors, as F5-TTS's do (IEEE addition commutes: the values are the same).
    return (swapped * signed_sin + xf * cos).to(x.dtype)

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
    """Rotate `x [b, h, n, dh]` by position, computing in float32 and returning `x`'s dtype."""
    cos, sin = rope
    xf = x.float()
    pairs = xf.unflatten(-1, (-1, 2))
    rotated = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    return (xf * cos + rotated * sin).to(x.dtype)

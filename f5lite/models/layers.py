"""Building blocks shared by the three backbones, with F5-TTS's parameter names and maths.

Shapes: b batch, n audio frames, d model width, td text width.

The submodule layouts (`time_mlp.0`, `conv1d.0`, `ff.0.0`, ...) mirror F5-TTS's so that released checkpoints load
without any key renaming.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from f5lite.models.packing import Packing, spread, spread_mul
from f5lite.sampling.backbone import DropFlag  # the contract's, for the building blocks' signatures

# F5-TTS embeds the flow time with a 256-channel sinusoid of 1000 * t.
TIME_FREQ_CHANNELS = 256
TIME_SCALE = 1000.0


def sinusoidal_time(t: torch.Tensor, channels: int = TIME_FREQ_CHANNELS) -> torch.Tensor:
    """Sinusoid of the flow time, `cat(sin, cos)` with F5-TTS's frequency spacing.

    Args:
        t: flow time `[b]`.
        channels: output channels (even).

    Returns:
        `[b, channels]` float32.
    """
    half = channels // 2
    step = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=torch.float32) * -step)
    angles = TIME_SCALE * t.float()[:, None] * freqs[None, :]
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


class TimestepEmbedding(nn.Module):
    """Flow time `[b]` to a conditioning vector `[b, d]`: sinusoid, then Linear-SiLU-Linear."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(TIME_FREQ_CHANNELS, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        """Embed the flow time.

        Args:
            t: `[b]`.
            extra: `[b, d]` added to the embedding (`Backbone.forward`'s `time_extra`), or None.

        Returns:
            `[b, d]`.
        """
        embedded = self.time_mlp(sinusoidal_time(t).to(t.dtype))
        return embedded if extra is None else embedded + extra.to(embedded.dtype)


def text_positions(n: int, dim: int, max_pos: int, device: torch.device) -> torch.Tensor:
    """F5-TTS's sinusoidal text position table: `cat(cos(p f), sin(p f))`, positions clamped to `max_pos - 1`.

    F5-TTS precomputes a `max_pos`-row buffer; computing the rows in use gives the same numbers without holding
    the table (8192 x 512 floats for v1 Base).

    Args:
        n: number of positions (0..n-1).
        dim: table width (even).
        max_pos: table length in F5-TTS; later positions repeat the last row.
        device: where to build it.

    Returns:
        `[n, dim]` float32.
    """
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, device=device)[: dim // 2].float() / dim))
    pos = torch.arange(n, device=device).clamp(max=max_pos - 1).float()
    angles = torch.outer(pos, freqs)
    return torch.cat((angles.cos(), angles.sin()), dim=-1)


class ConvPositionEmbedding(nn.Module):
    """Two grouped Conv1d (kernel 31, 16 groups) each followed by Mish; padded frames zeroed around each conv."""

    def __init__(self, dim: int, kernel_size: int = 31, groups: int = 16) -> None:
        super().__init__()
        pad = kernel_size // 2
        self.conv1d = nn.Sequential(
            nn.Conv1d(dim, dim, kernel_size, groups=groups, padding=pad),
            nn.Mish(),
            nn.Conv1d(dim, dim, kernel_size, groups=groups, padding=pad),
            nn.Mish(),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Convolutional position signal.

        Args:
            x: `[b, n, d]`.
            mask: `[b, n]` bool, True = real frame; padded frames are zeroed before and after each conv.

        Returns:
            `[b, n, d]` (the caller adds it to `x`).
        """
        keep = None if mask is None else mask[:, None, :]
        h = x.transpose(1, 2)
        for layer in self.conv1d:
            if keep is not None and isinstance(layer, nn.Conv1d):
                h = h.masked_fill(~keep, 0.0)
            h = layer(h)
        if keep is not None:
            # Mish(0) = 0, so zeroing after the last activation equals F5-TTS zeroing after the conv.
            h = h.masked_fill(~keep, 0.0)
        return h.transpose(1, 2)


class GRN(nn.Module):
    """Global response normalization (ConvNeXt-V2), with the L2 norm taken over the sequence axis as in F5-TTS."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, dim))
        self.beta = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize `[b, n, c]` channel responses."""
        gx = torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    """Text refinement block: depthwise conv (k 7), LayerNorm, Linear, exact GELU, GRN, Linear, residual."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv1d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.grn = GRN(hidden)
        self.pwconv2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Refine `[b, n, td]` text features."""
        h = self.dwconv(x.transpose(1, 2)).transpose(1, 2)
        h = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(h)))))
        return x + h


class FeedForward(nn.Module):
    """Linear, tanh-approximated GELU, dropout, Linear (keys `ff.0.0` and `ff.2` as in F5-TTS)."""

    def __init__(self, dim: int, mult: float, dropout: float) -> None:
        super().__init__()
        inner = int(dim * mult)
        self.ff = nn.Sequential(
            nn.Sequential(nn.Linear(dim, inner), nn.GELU(approximate="tanh")),
            nn.Dropout(dropout),
            nn.Linear(inner, dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """`[b, n, d] -> [b, n, d]`."""
        return self.ff(x)


class AdaLayerNorm(nn.Module):
    """AdaLN-Zero: six modulations from the time embedding, in F5-TTS's chunk order."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, dim * 6)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(
        self, x: torch.Tensor, t: torch.Tensor, packing: Packing | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Modulate `x` for attention and return the remaining modulations.

        Args:
            x: `[b, n, d]`, or `[1, N, d]` packed.
            t: time embedding `[b, d]`.
            packing: the batch's packing when `x` is packed.

        Returns:
            `(normed x like x, gate_msa, shift_mlp, scale_mlp, gate_mlp)`, the last four `[b, d]`.
        """
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.linear(self.silu(t)).chunk(6, dim=1)
        h = spread_mul(self.norm(x), 1 + scale_msa, packing) + spread(shift_msa, packing)
        return h, gate_msa, shift_mlp, scale_mlp, gate_mlp


class AdaLayerNormFinal(nn.Module):
    """Final AdaLN: `(scale, shift)` from the time embedding, scale first as in F5-TTS."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(dim, dim * 2)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x: torch.Tensor, t: torch.Tensor, packing: Packing | None = None) -> torch.Tensor:
        """Modulate `x [b, n, d]` (or `[1, N, d]` with its `packing`) with `t [b, d]`."""
        scale, shift = self.linear(self.silu(t)).chunk(2, dim=1)
        return spread_mul(self.norm(x), 1 + scale, packing) + spread(shift, packing)


class ScaledRMSNorm(nn.Module):
    """x_transformers' RMSNorm used by UNetT: `normalize(x) * sqrt(d) * g` (parameter name `g`)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = dim**0.5
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize `[..., d]`."""
        return F.normalize(x, dim=-1) * self.scale * self.g


def drop_rows(x: torch.Tensor, drop: DropFlag) -> torch.Tensor:
    """Zero whole samples of `x [b, ...]` where `drop` is set (a bool, or a `[b]` bool tensor)."""
    if isinstance(drop, bool):
        return torch.zeros_like(x) if drop else x
    keep = ~drop.to(device=x.device, dtype=torch.bool).view(-1, *([1] * (x.ndim - 1)))
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))


def modulate_residual(
    x: torch.Tensor, gate: torch.Tensor, h: torch.Tensor, packing: Packing | None = None
) -> torch.Tensor:
    """`x + gate * h` with a per-sample gate `[b, d]` spread over frames (`[b, n, d]`, or `[1, N, d]` packed)."""
    return x + spread_mul(h, gate, packing)


class InputEmbedding(nn.Module):
    """DiT/UNetT input: Linear over `cat(x, cond, text)`, plus the convolutional position signal."""

    def __init__(self, mel_dim: int, text_dim: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(mel_dim * 2 + text_dim, dim)
        self.conv_pos_embed = ConvPositionEmbedding(dim)

    def forward(
        self,
        x: torch.Tensor,
        cond: torch.Tensor,
        text_embed: torch.Tensor,
        drop_audio_cond: DropFlag = False,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Mix the noisy mel, the masked reference mel and the text.

        Args:
            x: `[b, n, mel]`.
            cond: `[b, n, mel]`.
            text_embed: `[b, n, td]`.
            drop_audio_cond: CFG audio drop (bool or `[b]` bool): zeroes `cond`.
            mask: `[b, n]` bool for the conv position signal, or None.

        Returns:
            `[b, n, d]`.
        """
        h = self.proj(torch.cat((x, drop_rows(cond, drop_audio_cond), text_embed), dim=-1))
        return self.conv_pos_embed(h, mask) + h


def time_vector(time: torch.Tensor, batch: int) -> torch.Tensor:
    """Broadcast a 0-d flow time to `[batch]` (F5-TTS accepts both)."""
    return time.expand(batch) if time.ndim == 0 else time

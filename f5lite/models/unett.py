"""UNetT backbone (E2-TTS): a flat U-Net of pre-norm transformer blocks with mirrored skip connections.

Shape legend:
    b   batch
    n   audio frames; the time embedding is prepended as one extra token, so blocks see n + 1 positions
    nt  text tokens (ids padded with -1), fitted to n frames
    mel mel channels (100)
    d   model width (`dim`)
    td  text width (`text_dim`, defaults to `mel`)
    h   heads, dh head width (`dim_head`)

A `Backbone` (`f5lite.sampling.backbone` documents its `forward`): x `[b, n, mel]`, cond `[b, n, mel]`,
text `[b, nt]`, time `[b]`, mask `[b, n]` -> velocity `[b, n, mel]`.
Each block is `layers.{i}` with children `0..4` = (skip_proj, attn_norm, attn, ff_norm, ff), F5-TTS's key layout.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from f5lite.models.attention import Attention
from f5lite.models.layers import DropFlag, FeedForward, InputEmbedding, ScaledRMSNorm, TimestepEmbedding, time_vector
from f5lite.models.rope import Rope, RotaryEmbedding
from f5lite.models.text_embed import FrameTextEmbedding
from f5lite.sampling.backbone import Backbone

SKIP_TYPES = ("concat", "add", "none")
# E2-TTS's text position table length (only used with conv_layers > 0).
TEXT_MAX_POS = 4096


class UNetTBlock(nn.ModuleList):
    """One UNetT layer. A ModuleList of five children so that its keys stay `layers.{i}.{0..4}`.

    Child 0 is the skip projection (`Linear(2d, d)`, only in the second half with `concat` skips, else None).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        dim_head: int,
        ff_mult: float,
        dropout: float,
        qk_norm: str | None,
        pe_attn_head: int | None,
        attn_mask_enabled: bool,
        skip_proj: bool,
    ) -> None:
        super().__init__()
        self.add_module("0", nn.Linear(dim * 2, dim, bias=False) if skip_proj else None)
        self.extend(
            [
                ScaledRMSNorm(dim),
                Attention(dim, heads, dim_head, dropout, qk_norm, pe_attn_head, attn_mask_enabled),
                ScaledRMSNorm(dim),
                FeedForward(dim, ff_mult, dropout),
            ]
        )

    def forward(
        self, x: torch.Tensor, skip: torch.Tensor | None, mask: torch.Tensor | None, rope: Rope
    ) -> torch.Tensor:
        """One layer.

        Args:
            x: `[b, n + 1, d]`.
            skip: the mirrored first-half input `[b, n + 1, d]` (second half), or None.
            mask: `[b, n + 1]` bool or None.
            rope: `(cos, sin)` `[n + 1, dh]`.

        Returns:
            `[b, n + 1, d]`.
        """
        skip_proj, attn_norm, attn, ff_norm, ff = self[0], self[1], self[2], self[3], self[4]
        if skip is not None:
            x = skip_proj(torch.cat((x, skip), dim=-1)) if skip_proj is not None else x + skip
        x = attn(attn_norm(x), mask, rope) + x
        return ff(ff_norm(x)) + x


class UNetT(Backbone):
    """E2-TTS's UNetT with F5-TTS's constructor options (see `f5lite.config.UNetTConfig`)."""

    def __init__(
        self,
        *,
        dim: int,
        depth: int = 8,
        heads: int = 8,
        dim_head: int = 64,
        dropout: float = 0.1,
        ff_mult: float = 4,
        mel_dim: int = 100,
        text_num_embeds: int = 256,
        text_dim: int | None = None,
        text_mask_padding: bool = True,
        qk_norm: str | None = None,
        conv_layers: int = 0,
        pe_attn_head: int | None = None,
        attn_mask_enabled: bool = False,
        skip_connect_type: str = "concat",
    ) -> None:
        super().__init__()
        if depth % 2:
            raise ValueError(f"UNetT depth={depth} is not valid; it must be even (mirrored halves)")
        if skip_connect_type not in SKIP_TYPES:
            raise ValueError(f"skip_connect_type={skip_connect_type!r} is not valid; choose one of: {SKIP_TYPES}")
        text_dim = mel_dim if text_dim is None else text_dim
        self.mel_dim = mel_dim
        self.dim = dim
        self.text_num_embeds = text_num_embeds
        self.skip_connect_type = skip_connect_type
        self.time_embed = TimestepEmbedding(dim)
        self.text_embed = FrameTextEmbedding(text_num_embeds, text_dim, text_mask_padding, conv_layers, TEXT_MAX_POS)
        self.input_embed = InputEmbedding(mel_dim, text_dim, dim)
        self.rotary_embed = RotaryEmbedding(dim_head)
        self.layers = nn.ModuleList(
            UNetTBlock(
                dim,
                heads,
                dim_head,
                ff_mult,
                dropout,
                qk_norm,
                pe_attn_head,
                attn_mask_enabled,
                skip_proj=skip_connect_type == "concat" and i >= depth // 2,
            )
            for i in range(depth)
        )
        self.norm_out = ScaledRMSNorm(dim)
        self.proj_out = nn.Linear(dim, mel_dim)

    @property
    def blocks(self) -> nn.ModuleList:
        """`Backbone.blocks`: `layers`."""
        return self.layers

    def embed_text(
        self, text: torch.Tensor, seq_len: int, mask: torch.Tensor | None = None, drop_text: DropFlag = False
    ) -> torch.Tensor:
        """`Backbone.embed_text`: the text fitted to the frames `[b, n, td]`, all n of them (E2-TTS; `mask` unused)."""
        return self.text_embed(text, seq_len, drop_text)

    def forward(
        self,
        x: torch.Tensor,
        cond: torch.Tensor,
        text: torch.Tensor,
        time: torch.Tensor,
        mask: torch.Tensor | None = None,
        drop_audio_cond: DropFlag = False,
        drop_text: DropFlag = False,
        *,
        text_embed: torch.Tensor | None = None,
        time_extra: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`Backbone.forward`: the time embedding is prepended as one more token."""
        n = x.shape[1]
        t = self.time_embed(time_vector(time, x.shape[0]), time_extra)
        if text_embed is None:
            text_embed = self.embed_text(text, n, mask, drop_text)
        h = torch.cat((t[:, None], self.input_embed(x, cond, text_embed, drop_audio_cond)), dim=1)
        if mask is not None:
            mask = F.pad(mask, (1, 0), value=True)
        rope = self.rotary_embed(n + 1)
        half = len(self.layers) // 2
        skips: list[torch.Tensor] = []
        for i, block in enumerate(self.layers):
            skip = None
            if i < half:
                skips.append(h)
            elif self.skip_connect_type != "none":
                skip = skips.pop()
            h = block(h, skip, mask, rope)
        return self.proj_out(self.norm_out(h)[:, 1:])

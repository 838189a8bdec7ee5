"""MMDiT backbone (F5-TTS's SD3-style variant): audio and text streams joined in every attention.

Shape legend:
    b   batch
    n   audio frames
    nt  text tokens (ids padded with -1); the text is its own sequence, not fitted to n
    mel mel channels (100)
    d   model width (`dim`, also the text width)
    h   heads, dh head width (`dim_head`)

A `Backbone` (`f5lite.sampling.backbone` documents its `forward`): x `[b, n, mel]`, cond `[b, n, mel]`,
text `[b, nt]`, time `[b]`, mask `[b, n]` -> velocity `[b, n, mel]`.
The last block is "context pre-only" (no text feed-forward, no `to_out_c`), as in F5-TTS, so keys match.
"""

from __future__ import annotations

import torch
from torch import nn

from f5lite.models.attention import JointAttention
from f5lite.models.layers import (
    AdaLayerNorm,
    AdaLayerNormFinal,
    ConvPositionEmbedding,
    DropFlag,
    FeedForward,
    TimestepEmbedding,
    drop_rows,
    modulate_residual,
    time_vector,
)
from f5lite.models.rope import Rope, RotaryEmbedding
from f5lite.models.text_embed import TokenTextEmbedding
from f5lite.sampling.backbone import Backbone


class AudioEmbedding(nn.Module):
    """Linear over `cat(x, cond)` plus the convolutional position signal (no mask, as in F5-TTS)."""

    def __init__(self, mel_dim: int, dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(2 * mel_dim, dim)
        self.conv_pos_embed = ConvPositionEmbedding(dim)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, drop_audio_cond: DropFlag = False) -> torch.Tensor:
        """`[b, n, mel]` twice -> `[b, n, d]`; `drop_audio_cond` zeroes `cond` (bool or `[b]` bool)."""
        h = self.linear(torch.cat((x, drop_rows(cond, drop_audio_cond)), dim=-1))
        return self.conv_pos_embed(h) + h


class MMDiTBlock(nn.Module):
    """Two-stream AdaLN-Zero block; the text stream stops after attention in the last block."""

    def __init__(
        self,
        dim: int,
        heads: int,
        dim_head: int,
        ff_mult: float,
        dropout: float,
        qk_norm: str | None,
        attn_mask_enabled: bool,
        context_pre_only: bool,
    ) -> None:
        super().__init__()
        self.context_pre_only = context_pre_only
        self.attn_norm_c: AdaLayerNormFinal | AdaLayerNorm = (
            AdaLayerNormFinal(dim) if context_pre_only else AdaLayerNorm(dim)
        )
        self.attn_norm_x = AdaLayerNorm(dim)
        self.attn = JointAttention(dim, heads, dim_head, dropout, qk_norm, context_pre_only, attn_mask_enabled)
        self.ff_norm_c = None if context_pre_only else nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff_c = None if context_pre_only else FeedForward(dim, ff_mult, dropout)
        self.ff_norm_x = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff_x = FeedForward(dim, ff_mult, dropout)

    def forward(
        self,
        x: torch.Tensor,
        c: torch.Tensor,
        t: torch.Tensor,
        mask: torch.Tensor | None,
        c_mask: torch.Tensor,
        rope: Rope,
        c_rope: Rope,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One block.

        Args:
            x: audio `[b, n, d]`.
            c: text `[b, nt, d]`.
            t: time embedding `[b, d]`.
            mask: `[b, n]` bool or None.
            c_mask: `[b, nt]` bool, True = real token.
            rope: audio `(cos, sin)` `[n, dh]`.
            c_rope: text `(cos, sin)` `[nt, dh]`.

        Returns:
            `(x [b, n, d], c [b, nt, d])`; the last block returns its input `c` unchanged (it is not used).
        """
        hx, gate_x, shift_mlp_x, scale_mlp_x, gate_mlp_x = self.attn_norm_x(x, t)
        if self.context_pre_only:
            hc = self.attn_norm_c(c, t)
        else:
            hc, gate_c, shift_mlp_c, scale_mlp_c, gate_mlp_c = self.attn_norm_c(c, t)
        ax, ac = self.attn(hx, hc, mask, c_mask, rope, c_rope)
        if ac is not None and self.ff_c is not None and self.ff_norm_c is not None:
            c = modulate_residual(c, gate_c, ac)
            c = modulate_residual(
                c, gate_mlp_c, self.ff_c(self.ff_norm_c(c) * (1 + scale_mlp_c[:, None]) + shift_mlp_c[:, None])
            )
        x = modulate_residual(x, gate_x, ax)
        x = modulate_residual(
            x, gate_mlp_x, self.ff_x(self.ff_norm_x(x) * (1 + scale_mlp_x[:, None]) + shift_mlp_x[:, None])
        )
        return x, c


class MMDiT(Backbone):
    """F5-TTS's MMDiT with its constructor options (see `f5lite.config.MMDiTConfig`)."""

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
        text_mask_padding: bool = True,
        qk_norm: str | None = None,
        attn_mask_enabled: bool = False,
    ) -> None:
        super().__init__()
        self.mel_dim = mel_dim
        self.dim = dim
        self.text_num_embeds = text_num_embeds
        self.time_embed = TimestepEmbedding(dim)
        self.text_embed = TokenTextEmbedding(text_num_embeds, dim, text_mask_padding)
        self.audio_embed = AudioEmbedding(mel_dim, dim)
        self.rotary_embed = RotaryEmbedding(dim_head)
        blocks = [
            MMDiTBlock(dim, heads, dim_head, ff_mult, dropout, qk_norm, attn_mask_enabled, i == depth - 1)
            for i in range(depth)
        ]
        self.transformer_blocks = nn.ModuleList(blocks)
        self.norm_out = AdaLayerNormFinal(dim)
        self.proj_out = nn.Linear(dim, mel_dim)
        # AdaLN-Zero, as in F5-TTS: an untrained model outputs exactly zero.
        zeroed = [self.norm_out.linear, self.proj_out]
        for block in blocks:
            zeroed += [block.attn_norm_x.linear, block.attn_norm_c.linear]
        for layer in zeroed:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    @property
    def blocks(self) -> nn.ModuleList:
        """`Backbone.blocks`: `transformer_blocks`."""
        return self.transformer_blocks

    def embed_text(
        self, text: torch.Tensor, seq_len: int, mask: torch.Tensor | None = None, drop_text: DropFlag = False
    ) -> torch.Tensor:
        """`Backbone.embed_text`: the text stream `[b, nt, d]` (`seq_len` and `mask` unused: it is its own sequence)."""
        return self.text_embed(text, drop_text)

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
        """`Backbone.forward`: audio and text streams attend jointly; the time conditions each block."""
        t = self.time_embed(time_vector(time, x.shape[0]), time_extra)
        c = self.embed_text(text, x.shape[1], mask, drop_text) if text_embed is None else text_embed
        c_mask = text != -1
        h = self.audio_embed(x, cond, drop_audio_cond)
        rope, c_rope = self.rotary_embed(x.shape[1]), self.rotary_embed(text.shape[1])
        for block in self.transformer_blocks:
            h, c = block(h, c, t, mask, c_mask, rope, c_rope)
        return self.proj_out(self.norm_out(h, t))

"""DiT backbone (F5-TTS): AdaLN-Zero transformer over `cat(noisy mel, reference mel, frame-aligned text)`.

Shape legend:
    b   batch
    n   audio frames (mel frames, 24 kHz / hop 256)
    nt  text tokens (ids padded with -1)
    mel mel channels (100)
    d   model width (`dim`)
    td  text width (`text_dim`, defaults to `mel`)
    h   heads, dh head width (`dim_head`)

A `Backbone` (`f5lite.sampling.backbone` documents its `forward`): x `[b, n, mel]`, cond `[b, n, mel]`,
text `[b, nt]`, time `[b]`, mask `[b, n]` -> velocity `[b, n, mel]`.
State-dict keys equal F5-TTS's (`transformer_blocks.{i}.attn.to_q.weight`, ...); `blocks` is the same ModuleList.
"""

from __future__ import annotations

import torch
from torch import nn

from f5lite.models.attention import Attention
from f5lite.models.layers import (
    AdaLayerNorm,
    AdaLayerNormFinal,
    DropFlag,
    FeedForward,
    InputEmbedding,
    TimestepEmbedding,
    modulate_residual,
    time_vector,
)
from f5lite.models.packing import Packing, pack_mask, spread, spread_mul
from f5lite.models.rope import Rope, RotaryEmbedding
from f5lite.models.text_embed import FrameTextEmbedding
from f5lite.sampling.backbone import Backbone

# F5-TTS's DiT text position table length (about 87 s of audio); later frames reuse the last row.
TEXT_MAX_POS = 8192


class DiTBlock(nn.Module):
    """AdaLN-Zero block: modulated attention and feed-forward, each with a time-dependent gate."""

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
    ) -> None:
        super().__init__()
        self.attn_norm = AdaLayerNorm(dim)
        self.attn = Attention(dim, heads, dim_head, dropout, qk_norm, pe_attn_head, attn_mask_enabled)
        self.ff_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, ff_mult, dropout)

    def forward(
        self, x: torch.Tensor, t: torch.Tensor, mask: torch.Tensor | None, rope: Rope, packing: Packing | None = None
    ) -> torch.Tensor:
        """One block.

        Args:
            x: `[b, n, d]`, or `[1, N, d]` packed (then `mask` is None).
            t: time embedding `[b, d]`.
            mask: `[b, n]` bool or None.
            rope: `(cos, sin)` `[n, dh]` (`[N, dh]` packed).
            packing: the batch's packing when `x` is packed.

        Returns:
            Like `x`.
        """
        h, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.attn_norm(x, t, packing)
        x = modulate_residual(x, gate_msa, self.attn(h, mask, rope, packing), packing)
        h = spread_mul(self.ff_norm(x), 1 + scale_mlp, packing) + spread(shift_mlp, packing)
        return modulate_residual(x, gate_mlp, self.ff(h), packing)


class DiT(Backbone):
    """F5-TTS's DiT with its constructor options (see `f5lite.config.DiTConfig` for each one)."""

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
        long_skip_connection: bool = False,
        attn_mask_enabled: bool = False,
        text_fit: str = "pad",
    ) -> None:
        super().__init__()
        text_dim = mel_dim if text_dim is None else text_dim
        self.mel_dim = mel_dim
        self.dim = dim
        self.text_num_embeds = text_num_embeds
        self.time_embed = TimestepEmbedding(dim)
        self.text_embed = FrameTextEmbedding(
            text_num_embeds, text_dim, text_mask_padding, conv_layers, TEXT_MAX_POS, fit=text_fit
        )
        self.input_embed = InputEmbedding(mel_dim, text_dim, dim)
        self.rotary_embed = RotaryEmbedding(dim_head)
        blocks = [
            DiTBlock(dim, heads, dim_head, ff_mult, dropout, qk_norm, pe_attn_head, attn_mask_enabled)
            for _ in range(depth)
        ]
        self.transformer_blocks = nn.ModuleList(blocks)
        self.long_skip_connection = nn.Linear(dim * 2, dim, bias=False) if long_skip_connection else None
        self.norm_out = AdaLayerNormFinal(dim)
        self.proj_out = nn.Linear(dim, mel_dim)
        self.packed = False
        """Run masked batches packed (`apply_packing`); not a parameter, so state-dict keys are unchanged."""
        # AdaLN-Zero: an untrained model outputs exactly zero and every block starts as the identity.
        for layer in [b.attn_norm.linear for b in blocks] + [self.norm_out.linear, self.proj_out]:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    @property
    def blocks(self) -> nn.ModuleList:
        """`Backbone.blocks`: `transformer_blocks`."""
        return self.transformer_blocks

    def embed_text(
        self, text: torch.Tensor, seq_len: int, mask: torch.Tensor | None = None, drop_text: DropFlag = False
    ) -> torch.Tensor:
        """`Backbone.embed_text`: the text fitted to the frames `[b, n, td]`, each sample's cut at its own length."""
        lens = None if mask is None else mask.sum(dim=1)
        return self.text_embed(text, seq_len, drop_text, lens)

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
        """`Backbone.forward`: the text fitted to the frames joins the input; the time conditions each block."""
        n = x.shape[1]
        t = self.time_embed(time_vector(time, x.shape[0]), time_extra)
        if text_embed is None:
            text_embed = self.embed_text(text, n, mask, drop_text)
        h = self.input_embed(x, cond, text_embed, drop_audio_cond, mask)
        if self.packed and mask is not None:
            return self._packed_blocks(h, t, pack_mask(mask))
        rope = self.rotary_embed(n)
        skip = h
        for block in self.transformer_blocks:
            h = block(h, t, mask, rope)
        if self.long_skip_connection is not None:
            h = self.long_skip_connection(torch.cat((h, skip), dim=-1))
        return self.proj_out(self.norm_out(h, t))

    def _packed_blocks(self, h: torch.Tensor, t: torch.Tensor, packing: Packing) -> torch.Tensor:
        """The blocks and the output head on the real frames only.

        Args:
            h: the input embedding `[b, n, d]`.
            t: the time embedding `[b, d]`.
            packing: the batch's packing.

        Returns:
            velocity `[b, n, mel]`, zero at padded frames (which the loss never reads).
        """
        rope = packing.rope(self.rotary_embed(packing.max_len))
        h = skip = packing.pack(h)
        for block in self.transformer_blocks:
            h = block(h, t, None, rope, packing)
        if self.long_skip_connection is not None:
            h = self.long_skip_connection(torch.cat((h, skip), dim=-1))
        return packing.unpack(self.proj_out(self.norm_out(h, t, packing)))

"""Text embeddings: frame-aligned for DiT and UNetT, a separate token stream for MMDiT.

Shapes: b batch, nt text tokens, n audio frames, td text width.

Ids arrive padded with -1 and are shifted by +1, so row 0 is the "filler" token: batch padding, dropped text and,
for DiT/UNetT, the positions past the end of the text. The padding mask is taken before the CFG text drop, so a
dropped text keeps the filler embedding at formerly real positions and zeros elsewhere (F5-TTS's behaviour).

How the text meets the frames (`TEXT_FITS`): F5-TTS's `pad` puts token j on frame j and filler after the text, so
the model has to learn where each token is spoken from nothing; `spread` (ZipVoice's average upsampling) embeds the
tokens at token rate and stretches them evenly over each utterance's frames, a rough alignment from the first update
that a small model refines far sooner. A `spread` model has no F5-TTS counterpart.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from f5lite.models.layers import ConvNeXtV2Block, DropFlag, drop_rows, text_positions

TEXT_FITS = ("pad", "spread")
"""How text tokens are laid on the frames: `pad` (F5-TTS) or `spread` (even upsampling); see the module docstring."""


class FrameTextEmbedding(nn.Module):
    """DiT/UNetT text path: ids fitted to the audio length, embedded, plus optional ConvNeXt-V2 refinement."""

    def __init__(
        self,
        num_embeds: int,
        text_dim: int,
        mask_padding: bool,
        conv_layers: int,
        max_pos: int,
        conv_mult: int = 2,
        fit: str = "pad",
    ) -> None:
        super().__init__()
        if fit not in TEXT_FITS:
            raise ValueError(f"text fit {fit!r} is not valid; choose one of: {', '.join(TEXT_FITS)}")
        self.fit = fit
        self.text_embed = nn.Embedding(num_embeds + 1, text_dim)
        self.mask_padding = mask_padding
        self.max_pos = max_pos
        self.text_blocks = (
            nn.Sequential(*[ConvNeXtV2Block(text_dim, text_dim * conv_mult) for _ in range(conv_layers)])
            if conv_layers > 0
            else None
        )

    def forward(
        self, text: torch.Tensor, seq_len: int, drop_text: DropFlag = False, lens: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Embed text ids onto `seq_len` frames.

        Args:
            text: `[b, nt]` int64 ids, padded with -1.
            seq_len: audio frames n.
            drop_text: CFG text drop (bool or `[b]` bool).
            lens: `[b]` valid audio frames per sample (DiT with a mask); ids at and past it become filler and
                their embeddings are zeroed. None uses all `seq_len` frames.

        Returns:
            `[b, n, td]`.
        """
        if self.fit == "spread":
            return self._spread(text, seq_len, drop_text, lens)
        ids = F.pad((text + 1)[:, :seq_len], (0, max(seq_len - text.shape[1], 0)), value=0)
        valid = None
        if lens is not None:
            valid = torch.arange(seq_len, device=ids.device)[None, :] < lens[:, None]
            ids = ids.masked_fill(~valid, 0)
        pad = ids == 0
        ids = drop_rows(ids, drop_text)
        emb = self.text_embed(ids)
        if self.text_blocks is None:
            return emb if valid is None else emb.masked_fill(~valid[..., None], 0.0)
        emb = emb + text_positions(seq_len, emb.shape[-1], self.max_pos, emb.device).to(emb.dtype)
        if valid is not None:
            emb = emb.masked_fill(~valid[..., None], 0.0)
        if not self.mask_padding:
            return self.text_blocks(emb)
        emb = emb.masked_fill(pad[..., None], 0.0)
        for block in self.text_blocks:
            emb = block(emb).masked_fill(pad[..., None], 0.0)
        return emb

    def _spread(self, text: torch.Tensor, seq_len: int, drop_text: DropFlag, lens: torch.Tensor | None) -> torch.Tensor:
        """`forward` for `fit="spread"`: embed (and refine) at token rate, then stretch over each sample's frames.

        Frame i of a sample with L valid frames and k tokens shows token `floor(i * k / L)`; frames past L are zero.
        """
        pad = text < 0
        emb = self.text_embed(drop_rows(text + 1, drop_text))
        if self.text_blocks is not None:
            emb = emb + text_positions(text.shape[1], emb.shape[-1], self.max_pos, emb.device).to(emb.dtype)
            for block in self.text_blocks:
                emb = block(emb.masked_fill(pad[..., None], 0.0))
        emb = emb.masked_fill(pad[..., None], 0.0)
        frames = torch.arange(seq_len, device=text.device)
        length = torch.full_like(pad[:, 0], seq_len, dtype=torch.long) if lens is None else lens.long()
        tokens = (~pad).sum(dim=1)
        index = (frames[None, :] * tokens[:, None]).div(length.clamp(min=1)[:, None], rounding_mode="floor")
        index = index.clamp(max=max(text.shape[1] - 1, 0))
        out = emb.gather(1, index[..., None].expand(-1, -1, emb.shape[-1]))
        return out.masked_fill((frames[None, :] >= length[:, None])[..., None], 0.0)


class TokenTextEmbedding(nn.Module):
    """MMDiT text stream: embedding plus sinusoidal positions over the tokens (no fitting to the audio)."""

    # F5-TTS's MMDiT precomputes 1024 positions; later ones reuse the last row.
    MAX_POS = 1024

    def __init__(self, num_embeds: int, dim: int, mask_padding: bool) -> None:
        super().__init__()
        self.text_embed = nn.Embedding(num_embeds + 1, dim)
        self.mask_padding = mask_padding

    def forward(self, text: torch.Tensor, drop_text: DropFlag = False) -> torch.Tensor:
        """Embed text ids as their own sequence.

        Args:
            text: `[b, nt]` int64 ids, padded with -1.
            drop_text: CFG text drop (bool or `[b]` bool).

        Returns:
            `[b, nt, d]`.
        """
        ids = text + 1
        pad = ids == 0
        emb = self.text_embed(drop_rows(ids, drop_text))
        emb = emb + text_positions(ids.shape[1], emb.shape[-1], self.MAX_POS, emb.device).to(emb.dtype)
        return emb.masked_fill(pad[..., None], 0.0) if self.mask_padding else emb

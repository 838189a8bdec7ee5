"""`Backbone`: what a velocity network is to the rest of f5lite, defined once.

f5lite's DiT, MMDiT and UNetT (`f5lite.models`) subclass it, and so does a distilled student
(`f5lite.models.distill.StudentBackbone`); they inherit the docstrings below instead of repeating them. The sampler,
the velocity (`f5lite.sampling.guidance.velocity_field`) and the distillation target type against it.

It lives here, in `sampling`, and not in `models`: the sampler is a layer below the networks (`models` may import
`sampling`, never the reverse), so the contract the sampler samples from has to be where the sampler can import it,
and the networks implement it from above.

Shapes: b batch, n audio frames, nt text ids, mel mel channels, d model width (`dim`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from torch import Tensor, nn

DropFlag = bool | Tensor
"""A CFG drop decision: one Python bool for the whole batch, or a `[b]` bool tensor per sample."""


class Backbone(nn.Module, ABC):
    """A flow-matching velocity network: `(x, cond, text, time) -> velocity`, with F5-TTS's inputs.

    Attributes:
        mel_dim: mel channels of `x`, `cond` and the velocity.
        dim: model width d: the time embedding's width, so also `time_extra`'s.
        distilled: False for a flow model, which the sampler guides with a second, unconditional pass. True for a
            distilled student (`f5lite.models.distill`): it learned the guided velocity of one Euler step, so its
            `forward` also takes the keywords `step` (the step size) and `guidance` (the guidance scale), and it
            carries `sampler_defaults` and `trained`; the sampler steps it once per step without unconditional pass.
    """

    mel_dim: int
    dim: int
    distilled: ClassVar[bool] = False

    @property
    @abstractmethod
    def blocks(self) -> nn.ModuleList:
        """The repeated unit, where optimizations are applied from outside (per-block compile, checkpointing)."""

    @abstractmethod
    def embed_text(self, text: Tensor, seq_len: int, mask: Tensor | None = None, drop_text: DropFlag = False) -> Tensor:
        """The text conditioning, reusable across calls on the same inputs as `forward(..., text_embed=)`.

        Args:
            text: ids `[b, nt]` padded with -1.
            seq_len: audio frames n.
            mask: `[b, n]` bool, True = real frame, or None (every frame); used by backbones that cut each
                sample's text at its own length (DiT).
            drop_text: CFG text drop (bool or `[b]` bool).

        Returns:
            The backbone's own text representation: `[b, n, td]` fitted to the frames (DiT, UNetT) or `[b, nt, d]`
            (MMDiT, which keeps the text as its own sequence).
        """

    @abstractmethod
    def forward(
        self,
        x: Tensor,
        cond: Tensor,
        text: Tensor,
        time: Tensor,
        mask: Tensor | None = None,
        drop_audio_cond: DropFlag = False,
        drop_text: DropFlag = False,
        *,
        text_embed: Tensor | None = None,
        time_extra: Tensor | None = None,
    ) -> Tensor:
        """Predict the flow velocity.

        Args:
            x: noisy mel `[b, n, mel]`.
            cond: reference mel, zero where generated `[b, n, mel]`.
            text: ids `[b, nt]` padded with -1.
            time: flow time `[b]` or 0-d.
            mask: `[b, n]` bool, True = real frame, or None.
            drop_audio_cond: CFG audio drop (bool or `[b]` bool).
            drop_text: CFG text drop (bool or `[b]` bool).
            text_embed: the result of `embed_text` for the same inputs, to skip recomputing it.
            time_extra: more time conditioning `[b, d]`, added to the time embedding (which conditions every
                block), e.g. a student's step and guidance embedding; None adds nothing.

        Returns:
            velocity `[b, n, mel]`.
        """

"""Few-step students: a backbone with two more conditioning inputs, the step size and the guidance scale.

A distilled student (flow distillation, as in ZipVoice-Distill) learns to go from flow time `t` to `t + d` in one
step where its teacher takes two guided Euler steps, with the guidance scale `w` as an input instead of a second,
unconditional pass. Both inputs are embedded as the flow time is (a sinusoid, then Linear-SiLU-Linear) and added to
the backbone's time embedding, which conditions every block (AdaLN) and the output norm. The last Linear of each
embedding starts at zero, so a student made from a teacher computes exactly the teacher's conditional velocity
until training moves it.

The inputs reach the backbone through a forward hook on its `time_embed`, so the backbone's code and its state-dict
keys are untouched: `StudentBackbone.backbone` holds the teacher's tensors under their own names, and the two
embeddings are `step_embed.*` beside them (`STUDENT_PREFIX`).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor, nn

from f5lite.models.layers import TIME_FREQ_CHANNELS, DropFlag, sinusoidal_time, time_vector

STUDENT_PREFIX = "step_embed."
"""The state-dict prefix of the student's own tensors (everything else is the backbone's, by its own names)."""


class StepEmbedding(nn.Module):
    """Step size `[b]` and guidance scale `[b]` to a conditioning vector `[b, dim]`, zero until trained.

    Args:
        dim: the backbone's time-embedding width.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        step_out, guidance_out = nn.Linear(dim, dim), nn.Linear(dim, dim)
        for last in (step_out, guidance_out):
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        self.step_mlp = nn.Sequential(nn.Linear(TIME_FREQ_CHANNELS, dim), nn.SiLU(), step_out)
        self.guidance_mlp = nn.Sequential(nn.Linear(TIME_FREQ_CHANNELS, dim), nn.SiLU(), guidance_out)

    def forward(self, step: Tensor, guidance: Tensor) -> Tensor:
        """Embed the two inputs.

        Args:
            step: step size `d` `[b]` in (0, 1].
            guidance: guidance scale `w` `[b]` (F5-TTS's `cfg_strength`; the sinusoid takes any range).

        Returns:
            `[b, dim]`, in the embeddings' dtype.
        """
        dtype = next(self.parameters()).dtype
        return self.step_mlp(sinusoidal_time(step).to(dtype)) + self.guidance_mlp(sinusoidal_time(guidance).to(dtype))


class StudentBackbone(nn.Module):
    """A backbone (DiT, MMDiT or UNetT) that also takes the step size and the guidance scale.

    Args:
        backbone: the velocity network; its `time_embed` output gets the step embedding added.
        sampler_defaults: the sampler settings it was trained for (`steps`, `cfg_strength`, `schedule`, `sway`),
            which replace the callers' defaults (`f5lite.sampling.options.with_model_defaults`).
        trained: what the distillation trained it on: `steps` (the step counts) and `guidance` (`[low, high]`);
            the sampler warns outside them. Empty: not known.

    Attributes:
        distilled: always True: the sampler steps it with `step=` and `guidance=` and no unconditional pass.
        sampler_defaults: as given.
        trained: as given.
    """

    distilled = True

    def __init__(
        self,
        backbone: nn.Module,
        sampler_defaults: dict[str, Any] | None = None,
        trained: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.sampler_defaults = dict(sampler_defaults or {})
        self.trained = dict(trained or {})
        self.backbone = backbone
        inner: Any = backbone  # DiT, MMDiT or UNetT: each has `time_embed` and `mel_dim`
        time_embed = inner.time_embed
        self.step_embed = StepEmbedding(int(time_embed.time_mlp[-1].out_features))
        self.mel_dim = int(inner.mel_dim)
        self._extra: Tensor | None = None
        time_embed.register_forward_hook(self._add_step_embedding)

    @property
    def blocks(self) -> nn.ModuleList:
        """The backbone's repeated unit, for optimizations applied from outside (compile, checkpointing)."""
        inner: Any = self.backbone
        return cast(nn.ModuleList, inner.blocks)

    def _add_step_embedding(self, module: nn.Module, args: object, output: Tensor) -> Tensor:
        return output if self._extra is None else output + self._extra.to(output.dtype)

    def embed_text(self, text: Tensor, seq_len: int, mask: Tensor | None = None, drop_text: DropFlag = False) -> Tensor:
        """The backbone's text conditioning (see its `embed_text`)."""
        inner: Any = self.backbone
        return cast(Tensor, inner.embed_text(text, seq_len, mask, drop_text))

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
        step: Tensor | float | None = None,
        guidance: Tensor | float | None = None,
        text_embed: Tensor | None = None,
    ) -> Tensor:
        """The velocity that takes `x` at `time` to `time + step` in one Euler step, guided by `guidance`.

        Args:
            x: noisy mel `[b, n, mel]`.
            cond: reference mel, zero where generated `[b, n, mel]`.
            text: ids `[b, nt]` padded with -1.
            time: flow time `[b]` or 0-d.
            mask: `[b, n]` bool, True = real frame, or None.
            drop_audio_cond: CFG audio drop (the student is trained with the condition kept).
            drop_text: CFG text drop.
            step: step size `[b]` or a number; None (with `guidance` None): the backbone's own velocity, without
                the embedding (what the flow objective and the validation loss see).
            guidance: guidance scale `[b]` or a number.
            text_embed: the result of `embed_text` for the same inputs.

        Returns:
            velocity `[b, n, mel]`.
        """
        b = x.shape[0]
        as_vector = lambda v: time_vector(torch.as_tensor(v, dtype=torch.float32, device=x.device), b)  # noqa: E731
        if (step is None) != (guidance is None):
            raise ValueError("give a student both its step size and its guidance scale, or neither")
        self._extra = None if step is None else self.step_embed(as_vector(step), as_vector(guidance))
        try:
            return cast(
                Tensor, self.backbone(x, cond, text, time, mask, drop_audio_cond, drop_text, text_embed=text_embed)
            )
        finally:
            self._extra = None

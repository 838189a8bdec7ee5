"""Few-step students: a backbone with two more conditioning inputs, the step size and the guidance scale.

A distilled student (flow distillation, as in ZipVoice-Distill) learns to go from flow time `t` to `t + d` in one
step where its teacher takes two guided Euler steps, with the guidance scale `w` as an input instead of a second,
unconditional pass. Both inputs are embedded as the flow time is (a sinusoid, then Linear-SiLU-Linear) and added to
the backbone's time embedding, which conditions every block (AdaLN) and the output norm. The last Linear of each
embedding starts at zero, so a student made from a teacher computes exactly the teacher's conditional velocity
until training moves it.

The embedding reaches the backbone as an argument, `Backbone.forward`'s `time_extra`, computed in each call from that
call's `step` and `guidance`: the student holds no per-call state, so concurrent calls are safe. The backbone's
state-dict keys are untouched: `StudentBackbone.backbone` holds the teacher's tensors under their own names, and the
two embeddings are `step_embed.*` beside them (`STUDENT_PREFIX`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from f5lite.models.layers import TIME_FREQ_CHANNELS, sinusoidal_time, time_vector
from f5lite.sampling.backbone import Backbone, DropFlag

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


class StudentBackbone(Backbone):
    """A backbone (DiT, MMDiT or UNetT) that also takes the step size and the guidance scale.

    Args:
        backbone: the velocity network; it gets the step embedding as its `time_extra`.
        sampler_defaults: the sampler settings it was trained for (`steps`, `cfg_strength`, `schedule`, `sway`),
            which replace the callers' defaults (`f5lite.sampling.options.with_model_defaults`).
        trained: what the distillation trained it on: `steps` (the step counts) and `guidance` (`[low, high]`);
            the sampler warns outside them. Empty: not known.

    Attributes:
        distilled: always True: the sampler steps it with `step=` and `guidance=` and no unconditional pass.
        sampler_defaults: as given.
        trained: as given.

    Raises:
        TypeError: `backbone` is no `Backbone`.
    """

    distilled = True

    def __init__(
        self,
        backbone: nn.Module,
        sampler_defaults: dict[str, Any] | None = None,
        trained: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(backbone, Backbone):
            raise TypeError(f"a student wraps a Backbone (DiT, MMDiT, UNetT), got {type(backbone).__name__}")
        self.sampler_defaults = dict(sampler_defaults or {})
        self.trained = dict(trained or {})
        self.backbone = backbone
        self.step_embed = StepEmbedding(backbone.dim)
        self.mel_dim = backbone.mel_dim
        self.dim = backbone.dim

    @property
    def blocks(self) -> nn.ModuleList:
        """`Backbone.blocks`: the backbone's."""
        return self.backbone.blocks

    def embed_text(self, text: Tensor, seq_len: int, mask: Tensor | None = None, drop_text: DropFlag = False) -> Tensor:
        """`Backbone.embed_text`: the backbone's."""
        return self.backbone.embed_text(text, seq_len, mask, drop_text)

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
        step: Tensor | float | None = None,
        guidance: Tensor | float | None = None,
    ) -> Tensor:
        """The velocity that takes `x` at `time` to `time + step` in one Euler step, guided by `guidance`.

        The arguments are `Backbone.forward`'s (a `time_extra` is added to the step embedding) and two more: `step`,
        the step size `[b]` or a number, and `guidance`, the guidance scale `[b]` or a number. With both None it is
        the backbone's own velocity, without the embedding (what the flow objective and the validation loss see).

        Returns:
            velocity `[b, n, mel]`.

        Raises:
            ValueError: only one of `step` and `guidance` given.
        """
        if (step is None) != (guidance is None):
            raise ValueError("give a student both its step size and its guidance scale, or neither")
        if step is not None and guidance is not None:
            own = self.step_embed(self._per_sample(step, x), self._per_sample(guidance, x))
            time_extra = own if time_extra is None else own + time_extra
        return self.backbone(
            x, cond, text, time, mask, drop_audio_cond, drop_text, text_embed=text_embed, time_extra=time_extra
        )

    @staticmethod
    def _per_sample(value: Tensor | float, x: Tensor) -> Tensor:
        """A number or `[b]` values as float32 `[b]` on `x`'s device."""
        return time_vector(torch.as_tensor(value, dtype=torch.float32, device=x.device), x.shape[0])

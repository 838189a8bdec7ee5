"""`StudioSettings`: how the studio runs models, as `f5lite-studio`'s command line sets them."""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.sampling import SamplerOptions


@dataclass(frozen=True)
class StudioSettings:
    """How the studio runs models.

    Attributes:
        vocoder: `vocos` or `griffin_lim`, for Speak, training samples' defaults and evaluations.
        vocoder_source: Vocos weights (a local directory or a hub id); None: the default.
        device: `auto`, `cpu` or `cuda`.
        options: where Speak's sampler settings start (`sample.*` on the command line); the page changes steps,
            guidance, CFG-Zero* and speed, the rest (method, schedule, sway, zero-init steps) apply as given.
        seed: where Speak's seed starts; None: a new one each time.
    """

    vocoder: str = "vocos"
    vocoder_source: str | None = None
    device: str = "auto"
    options: SamplerOptions = field(default_factory=SamplerOptions)
    seed: int | None = None

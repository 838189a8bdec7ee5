"""The `sample` section: the sampler's settings and the vocoder, of a training run and of every tool that speaks."""

from __future__ import annotations

from dataclasses import dataclass, fields

from f5lite.audio.vocoder import DEFAULT_VOCOS_REPO, VOCODER_NAMES, refuse_removed_vocoder_name
from f5lite.config.checks import check_choice
from f5lite.sampling.options import SamplerOptions


@dataclass(frozen=True)
class SampleConfig(SamplerOptions):
    """Sampler settings used for training samples and by `f5lite-infer`.

    The sampler's own settings (`steps`, `method`, `schedule`, `sway`, `cfg_strength`, `cfg_zero_init_steps`,
    `cfg_zero_star`, `speed`) are inherited from `SamplerOptions`, where each is documented and checked: one
    definition for the config, the Python API and the command line. This section adds what is not a sampler setting.
    `speed` sets the duration of what `Synthesizer` speaks (`f5lite-infer`, the fixed prompts of `eval.*`); a training
    sample continues its utterance for the utterance's true duration, so `speed` does not change it.
    Frozen like its base: `compose_config` merges overrides before the objects are made.
    """

    seed: int | None = None
    """Seed of the initial noise; `null` draws a random one (training samples then use the run's `seed`)."""
    vocoder: str = "vocos"
    """Vocoder: `vocos` or `griffin_lim` (no weights, works offline)."""
    vocoder_source: str = DEFAULT_VOCOS_REPO
    """Vocos weights: a local directory with config.yaml and pytorch_model.bin, or a Hugging Face hub id."""

    def __post_init__(self) -> None:
        try:
            super().__post_init__()
        except ValueError as err:  # the sampler's messages start with the field's name
            raise ValueError(f"sample.{err}") from None
        refuse_removed_vocoder_name("sample.vocoder", self.vocoder)
        check_choice("sample.vocoder", self.vocoder, VOCODER_NAMES)
        if self.vocoder == "griffin_lim" and self.vocoder_source != DEFAULT_VOCOS_REPO:
            raise ValueError("sample.vocoder_source is for vocos; the griffin_lim vocoder has no weights")

    def sampler_options(self) -> SamplerOptions:
        """The sampler settings of this section, as the plain value `sample` and `Synthesizer` take."""
        return SamplerOptions(**{f.name: getattr(self, f.name) for f in fields(SamplerOptions)})

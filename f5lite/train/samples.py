"""Training samples: every `logger.sample_every` updates, hear what the EMA weights make of a training utterance.

The first third of the batch's first utterance is the reference; the model continues it for the rest of the
utterance's length with the configured sampler (`sample.*`, as `SampleConfig.sampler_options()` gives it, and
`sample.seed`, else the run's seed, so successive samples differ only by the weights). The mel image and the vocoded
audio go to the metric logger. The vocoder is loaded when the logger is made, at start-up, so that a missing vocoder
stops the run before training rather than hours into it.
"""

from __future__ import annotations

import torch
from torch import nn

from f5lite.audio import SAMPLE_RATE, Vocoder, load_vocoder
from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.models import build_backbone_from_config
from f5lite.sampling import sample
from f5lite.train.loggers import MetricLogger


class SampleLogger:
    """Synthesizes and logs training samples with a separate backbone that receives the EMA weights.

    Args:
        cfg: the run's config (`model`, `sample`, `seed`).
        num_embeds: the text vocabulary size.
        device: where to sample.

    Raises:
        ValueError: the vocoder cannot be loaded (e.g. a hub id on an offline machine).
    """

    def __init__(self, cfg: TrainConfig, num_embeds: int, device: torch.device) -> None:
        self.options = cfg.sample.sampler_options()
        self.seed = cfg.sample.seed if cfg.sample.seed is not None else cfg.seed
        self.model: nn.Module = build_backbone_from_config(cfg.model, num_embeds).to(device).eval()
        self.device = device
        source = None if cfg.sample.vocoder == "griffin_lim" else cfg.sample.vocoder_source
        try:
            self.vocoder: Vocoder = load_vocoder(cfg.sample.vocoder, source, device)
        except OSError as err:
            raise ValueError(
                f"sample.vocoder={cfg.sample.vocoder} cannot be loaded from sample.vocoder_source={source!r} for "
                f"training samples ({err}); give a local Vocos directory, sample.vocoder=griffin_lim, or "
                "logger.sample_every=0"
            ) from None

    @torch.no_grad()
    def log(self, logger: MetricLogger, weights: dict[str, torch.Tensor], batch: Batch, update: int) -> None:
        """Continue the first third of the batch's first utterance with `weights`; log its mel and audio.

        Args:
            logger: where the sample goes.
            weights: plain backbone weights (the EMA, adapters folded in).
            batch: a training batch (its first utterance is used).
            update: the optimizer update, for the logger.
        """
        self.model.load_state_dict(weights)
        frames = int(batch.mel_lengths[0])
        ref = max(frames // 3, 1)
        mel = sample(
            self.model,
            batch.mel[:1, :ref].to(self.device),
            batch.text_ids[:1].to(self.device),
            frames,
            self.options,
            seed=self.seed,
        )[0, ref:frames]
        audio = self.vocoder.decode(mel[None].float())[0]
        logger.log_sample(mel, audio, SAMPLE_RATE, update)

"""Training samples: every `logger.sample_every` updates, hear what the EMA weights make of a training utterance.

The first third of the batch's first utterance is the reference; the model continues it for the rest of the
utterance's length with the configured sampler (`sample.*`, as `SampleConfig.sampler_options()` gives it, and
`sample.seed`, else the run's seed, so successive samples differ only by the weights). The mel image and the vocoded
audio go to the metric logger. Unlike the fixed prompts (`f5lite.train.prompts`), the utterance is one the model
trains on, and the duration is the true one: a quick look, not a measurement.
"""

from __future__ import annotations

import torch
from torch import nn

from f5lite.audio import SAMPLE_RATE, Vocoder
from f5lite.config.sample import SampleConfig
from f5lite.data.collate import Batch
from f5lite.sampling import sample
from f5lite.train.loggers import MetricLogger


class SampleLogger:
    """Synthesizes and logs training samples with the evaluation backbone.

    Args:
        sample: the run's `sample` section.
        seed: the run's seed (the samples' noise when `sample.seed` is not set).
        backbone: the evaluation backbone; the caller loads the weights to hear into it.
        vocoder: the run's vocoder.
        device: where to sample.
    """

    def __init__(
        self, sample: SampleConfig, seed: int, backbone: nn.Module, vocoder: Vocoder, device: torch.device
    ) -> None:
        self.options = sample.sampler_options()
        self.seed = sample.seed if sample.seed is not None else seed
        self.model = backbone
        self.vocoder = vocoder
        self.device = device

    @torch.no_grad()
    def log(self, logger: MetricLogger, batch: Batch, update: int) -> None:
        """Continue the first third of the batch's first utterance with the backbone; log its mel and audio.

        Args:
            logger: where the sample goes.
            batch: a training batch (its first utterance is used).
            update: the optimizer update, for the logger.
        """
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

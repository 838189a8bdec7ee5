"""Fixed prompts: every `eval.sample_every` updates, speak a test set through the inference path and score it.

The rows of `eval.prompts` (a test-set file, `f5lite.data.testset`) are synthesized by a `Synthesizer` around the
evaluation backbone (holding the EMA weights), with the run's vocoder and sampler settings (`sample.*`) and a fixed
noise seed per row (`eval.seed` + row), so two evaluations differ only by the weights. Each output is scored with
`f5lite.metrics` (`eval.metrics`: WER/CER, speaker similarity to the reference, predicted MOS, mel distances to
the ground truth) and logged with its mel image; the means are what `ckpt.best_metric=prompts/<key>` ranks by.

Everything that can fail (the file, its audio, the metric backends and their packages) is loaded when the run
starts, not at the first evaluation hours later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from f5lite.audio import SAMPLE_RATE, Vocoder, load_audio, log_mel
from f5lite.config.ckpt import PROMPT_PREFIX
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.config.sample import SampleConfig
from f5lite.data.testset import TestRow, read_testset
from f5lite.infer.synthesizer import Synthesizer
from f5lite.metrics.items import EvalItem, MetricSettings
from f5lite.text import TextEncoder

if TYPE_CHECKING:
    from f5lite.metrics.scoring import Metric


@dataclass(frozen=True)
class _Prompt:
    row: TestRow
    ref: Tensor
    gt: Tensor | None


@dataclass(frozen=True)
class SpokenPrompt:
    """One synthesized prompt.

    Attributes:
        id: the test-set row's id.
        audio: `[samples]` float32 at `SAMPLE_RATE`.
        mel: `[n, N_MELS]` log-mel of `audio`, for the image.
        scores: the metrics' values for it.
    """

    id: str
    audio: Tensor
    mel: Tensor
    scores: dict[str, float | str]


class PromptSet:
    """The fixed prompts of a run, their metric backends and a synthesizer.

    Args:
        ev: the run's `eval` section (how many prompts, their seed, the metric backends).
        sample: the run's `sample` section (how they are spoken).
        mel_type: the run's `data.mel_type`.
        path: the test-set file.
        backbone: the evaluation backbone (receives the weights to evaluate; in eval mode).
        encoder: the run's text encoder.
        vocoder: the run's vocoder.
        device: where synthesis runs.

    Raises:
        ValueError: the file or its audio cannot be read, or a metric backend is unknown or cannot be loaded.
        ImportError: the metrics need the `eval` extra.
    """

    def __init__(
        self,
        ev: TrainEvalConfig,
        sample: SampleConfig,
        mel_type: str,
        path: str,
        backbone: nn.Module,
        encoder: TextEncoder,
        vocoder: Vocoder,
        device: torch.device,
    ) -> None:
        rows = read_testset(path)[: ev.max_prompts]
        self.prompts = [
            _Prompt(row, _read(row.ref_audio), None if row.gt_audio is None else _read(row.gt_audio)) for row in rows
        ]
        self.options = sample.sampler_options()
        self.seed = ev.seed
        self.synthesizer = Synthesizer(backbone, encoder, vocoder, mel_type)
        self.metrics = _build_metrics(ev, device)

    def speak(self, log: Callable[[SpokenPrompt], None] | None = None) -> list[SpokenPrompt]:
        """Synthesize and score every prompt with the backbone's current weights.

        Args:
            log: called with each prompt as it is done (to log its audio while the next one is made).

        Returns:
            The prompts, in file order.
        """
        from f5lite.metrics.scoring import score_item

        spoken = []
        for index, prompt in enumerate(self.prompts):
            row = prompt.row
            wave, rate = self.synthesizer.synthesize(
                row.gen_text, prompt.ref, row.ref_text, self.options, seed=self.seed + index
            )
            item = EvalItem(
                id=row.id,
                gen_text=row.gen_text,
                audio=wave,
                sample_rate=rate,
                ref_audio=prompt.ref,
                ref_sample_rate=SAMPLE_RATE,
                gt_audio=prompt.gt,
                gt_sample_rate=SAMPLE_RATE if prompt.gt is not None else 0,
            )
            mel = log_mel(wave[None], kind=self.synthesizer.mel_type)[0]
            done = SpokenPrompt(row.id, wave, mel, score_item(self.metrics, item))
            if log is not None:
                log(done)
            spoken.append(done)
        return spoken


def prompt_means(spoken: list[SpokenPrompt]) -> dict[str, float]:
    """The mean of every numeric metric over the prompts, as `prompts/<key>`."""
    from f5lite.metrics.scoring import summarize

    means = summarize([p.scores for p in spoken])
    return {f"{PROMPT_PREFIX}{key}": value for key, value in means.items() if key != "count"}


def _read(path: object) -> Tensor:
    try:
        return load_audio(str(path))
    except (ValueError, OSError) as err:
        raise ValueError(f"eval.prompts: cannot read {path}: {err}") from None


def _build_metrics(ev: TrainEvalConfig, device: torch.device) -> list[Metric]:
    try:
        from f5lite.metrics.scoring import build_metrics

        settings = MetricSettings(asr=ev.asr, speaker=ev.speaker, mos=ev.mos, language=ev.language, device=str(device))
        return build_metrics(ev.metrics, settings)
    except ImportError as err:
        raise ValueError(f"eval.metrics={list(ev.metrics)}: {err} (or set eval.metrics=[])") from None

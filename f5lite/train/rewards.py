"""The rewards of online RL (`grpo.rewards`): f5lite's speech metrics on each generated clip, weighed into one number.

Each reward is a metric of `f5lite.metrics`, scored with the backend that evaluation uses (`eval.asr`,
`eval.speaker`, `eval.mos`, `eval.language`), so a run optimises what `f5lite-eval` and the training prompts
measure. Every term counts higher = better: `wer` as `-min(error rate, 1)` (one badly hallucinated clip cannot
outweigh the rest of its group), `sim` as the cosine to the prompt's voice, `mos` as the predicted MOS.
The backends load when the run starts, so a missing package or model stops it before it trains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.metrics.items import EvalItem, MetricSettings

if TYPE_CHECKING:
    from f5lite.metrics.scoring import Metric


class Rewards:
    """The weighted rewards of a run, their backends loaded.

    Args:
        rewards: `grpo.rewards`, each reward's weight (0 leaves it out).
        ev: the run's `eval` section (the backends and the language).
        device: where the hub-style backends run.

    Raises:
        ValueError: a backend that is unknown, not installed or whose model is missing (one line, naming
            `grpo.rewards` and how to install it).
    """

    def __init__(self, rewards: Mapping[str, float], ev: TrainEvalConfig, device: torch.device) -> None:
        weights = {name: float(w) for name, w in rewards.items() if w > 0}
        self.names = list(weights)
        self.weights = torch.tensor([weights[name] for name in self.names])
        self.error_key = "wer" if ev.language == "en" else "cer"
        settings = MetricSettings(asr=ev.asr, speaker=ev.speaker, mos=ev.mos, language=ev.language, device=str(device))
        try:
            from f5lite.metrics.scoring import build_metrics

            self.metrics: list[Metric] = build_metrics(self.names, settings)
        except ImportError as err:
            raise ValueError(f"grpo.rewards={weights}: {err}") from None

    def terms(self, waves: Sequence[Tensor], texts: Sequence[str], voices: Sequence[Tensor]) -> Tensor:
        """Each clip's reward terms, higher = better.

        Args:
            waves: the generated clips `[samples]` at `SAMPLE_RATE`.
            texts: what each should say.
            voices: each prompt's reference clip `[samples]` at `SAMPLE_RATE`.

        Returns:
            float32 `[clips, len(names)]`, columns in `names` order.
        """
        rows = []
        for wave, text, voice in zip(waves, texts, voices, strict=True):
            item = EvalItem("rollout", text, wave, SAMPLE_RATE, ref_audio=voice, ref_sample_rate=SAMPLE_RATE)
            rows.append([self._term(metric, item) for metric in self.metrics])
        return torch.tensor(rows, dtype=torch.float32)

    def window(self, updates: list[Tensor], *extra: str) -> dict[str, float]:
        """The log of a window of updates: the mean over `updates` of each one's `[reward, *terms, *extra]`.

        Args:
            updates: per update, its mean total, its mean terms (in `names` order), then one value per `extra` name.
            extra: names of what follows the terms (empty for the flow model's GRPO).

        Returns:
            `{"reward": ..., "reward_<name>": ..., *extra}`; empty when `updates` is.
        """
        if not updates:
            return {}
        keys = ["reward", *(f"reward_{name}" for name in self.names), *extra]
        return dict(zip(keys, torch.stack(updates).mean(dim=0).tolist(), strict=True))

    def total(self, terms: Tensor) -> Tensor:
        """The weighted sum of `terms` `[clips, len(names)]`: `[clips]`."""
        return (terms * self.weights).sum(dim=1)  # not a matmul: autocast would take it to half precision

    def _term(self, metric: Metric, item: EvalItem) -> float:
        scores = metric.score(item)
        if metric.name == "wer":
            return -min(float(scores[self.error_key]), 1.0)
        return float(scores[metric.name])

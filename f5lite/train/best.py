"""The best value of `ckpt.best_metric` so far, for keeping the best checkpoints and for early stopping.

Its state goes into every checkpoint, so a resumed run continues counting where the checkpoint was.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from f5lite.config.ckpt import BEST_VAL_METRICS, PROMPT_PREFIX
from f5lite.metrics.scoring import LOWER_IS_BETTER


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of `metric` (`val/loss`, `prompts/wer`, `prompts/sim`, ...) is better."""
    if metric in BEST_VAL_METRICS:
        return True
    return LOWER_IS_BETTER[metric.removeprefix(PROMPT_PREFIX)]


@dataclass
class BestTracker:
    """Tracks the best value of one metric and the evaluations since it.

    Attributes:
        metric: the metric's logged name.
        patience: evaluations without a new best after which `should_stop` says so; 0 never.
        value: the best value so far (None before the first evaluation).
        update: the update it was measured at.
        stale: evaluations since the best one.
    """

    metric: str
    patience: int = 0
    value: float | None = None
    update: int | None = None
    stale: int = 0

    @property
    def lower(self) -> bool:
        """Whether smaller is better for this metric."""
        return lower_is_better(self.metric)

    def observe(self, value: float, update: int) -> bool:
        """Record an evaluation; a NaN never counts as a new best.

        Returns:
            Whether it is a new best.
        """
        better = not math.isnan(value) and (
            self.value is None or (value < self.value if self.lower else value > self.value)
        )
        if better:
            self.value, self.update, self.stale = value, update, 0
        else:
            self.stale += 1
        return better

    def should_stop(self) -> bool:
        """Whether `patience` evaluations in a row brought no new best."""
        return bool(self.patience) and self.stale >= self.patience

    def state_dict(self) -> dict[str, Any]:
        """The state for a checkpoint's metadata."""
        return {k: v for k, v in asdict(self).items() if k not in ("metric", "patience")} | {"metric": self.metric}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Continue from a checkpoint's state (ignored when it tracked another metric or is absent)."""
        if not state or state.get("metric") != self.metric:
            return
        self.value, self.update, self.stale = state["value"], state["update"], int(state["stale"])

"""The `ckpt` section of a training run: checkpoints, the best ones kept, and the final export."""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.config.checks import check_at_least, check_choice
from f5lite.models.dtypes import WEIGHT_DTYPES

BEST_VAL_METRICS = ("val/loss", "val/loss_online")
"""`ckpt.best_metric` values measured by the validation loss."""
PROMPT_PREFIX = "prompts/"
"""Prefix of `ckpt.best_metric` values measured on the fixed prompts (`prompts/wer`, ...)."""


@dataclass
class CkptConfig:
    """Training checkpoints (written atomically; resumed exactly) and the final model export.

    `async_save` is named `ckpt.async` on the command line (`async` is a Python keyword, which no dataclass field can
    be named); its field's name sets it too.
    """

    every: int = 5000
    """Save a training checkpoint every N optimizer updates."""
    keep_last: int = 3
    """How many training checkpoints to keep; 0 keeps all."""
    keep_best: int = 0
    """Also keep the K checkpoints with the best `best_metric` (besides the last ones); `f5lite-export --best`
    exports the best. Needs every checkpoint to be evaluated: `eval.every` (or `eval.sample_every` for a prompt
    metric) must divide `ckpt.every`."""
    best_metric: str = "val/loss"
    """What `keep_best` and `eval.patience` rank by: `val/loss` (EMA weights), `val/loss_online`, or a metric of
    the fixed prompts, `prompts/<key>` (`prompts/wer`, `prompts/cer`, `prompts/sim`, `prompts/mos`,
    `prompts/mel_l1`, `prompts/mcd`, `prompts/f0_rmse`); lower is better except for sim and mos."""
    async_save: bool = False
    """Write checkpoints in the background so training does not stall on disk I/O (`ckpt.async` on the command
    line)."""
    export_dtype: str = "fp32"
    """Dtype of the model weights exported at the end of training: `fp32`, `bf16` or `fp16`."""
    stop_timeout_s: float = 25.0
    """After SIGTERM/SIGINT, seconds the checkpoint of the last update may take; past it the run exits without it
    (the previous checkpoint is intact). Keep it below the launcher's grace period (torchrun and SLURM: 30 s)."""
    stop_check_every: int = 5
    """With several ranks, agree every N updates whether any rank was asked to stop (one tiny all-reduce); a single
    process checks after every update at no cost."""

    def __post_init__(self) -> None:
        check_at_least("ckpt.every", self.every, 1)
        if not self.stop_timeout_s > 0:
            raise ValueError(f"ckpt.stop_timeout_s={self.stop_timeout_s!r} is not valid; it must be > 0")
        check_at_least("ckpt.stop_check_every", self.stop_check_every, 1)
        check_at_least("ckpt.keep_last", self.keep_last, 0)
        check_at_least("ckpt.keep_best", self.keep_best, 0)
        if not (self.best_metric in BEST_VAL_METRICS or self.best_metric.startswith(PROMPT_PREFIX)):
            choices = ", ".join((*BEST_VAL_METRICS, f"{PROMPT_PREFIX}<metric>"))
            raise ValueError(f"ckpt.best_metric={self.best_metric!r} is not valid; choose one of: {choices}")
        check_choice("ckpt.export_dtype", self.export_dtype, WEIGHT_DTYPES)

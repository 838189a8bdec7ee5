"""Evaluation while training, on rank 0: validation loss, fixed prompts with speech metrics, training samples.

`Evaluator` owns a plain backbone (no compile, no checkpointing, eval mode) that holds no weights of its own: it is
built on the meta device, and for an evaluation the weights to evaluate are assigned to it, the EMA weights (what
inference uses), and with `eval.online=true` also the online ones. Assigned, not copied: the EMA's tensors and the
training module's parameters are used in place, so there is no second copy of the model on the training device.
Weights that are not on the evaluation device already (`ema.device=cpu` while training on a GPU) are copied there
for the evaluation only, because evaluating on the CPU would take far longer than the copy; with LoRA the merged
weights are a new tensor set for the evaluation. Either way they are let go when the evaluation ends (the backbone
returns to the meta device), so nothing is held between evaluations. The schedule comes from the config alone
(`due`), so every rank knows when rank 0 evaluates.

Only rank 0 evaluates (the EMA lives there). The other ranks go on with the next update and wait for rank 0 in its
gradient all-reduce, so a step with an evaluation takes as long as the evaluation and no longer; an evaluation
longer than the process group's timeout (torch's default: 10 minutes for NCCL) would end the run, so keep the
validation set and the prompts small enough (`eval.max_utterances`, `eval.max_prompts`). The seconds each
evaluation takes are logged (`eval/val_seconds`, `eval/prompts_seconds`).

Results go to the metric logger, to the console, and to `RUN_DIR/logs/eval.jsonl` (one line per evaluation).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from f5lite.audio import SAMPLE_RATE, Vocoder, load_vocoder
from f5lite.config import TrainConfig
from f5lite.config.ckpt import PROMPT_PREFIX
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.config.sample import SampleConfig
from f5lite.data.collate import Batch
from f5lite.data.manifest import VAL_TESTSET_NAME
from f5lite.models import build_backbone_from_config
from f5lite.models.duration import DurationPredictor
from f5lite.storage.model_sources import run_backbone
from f5lite.storage.names import EVAL_LOG
from f5lite.text import TextEncoder
from f5lite.train.duration import load_duration_cases, validation_errors
from f5lite.train.loggers import MetricLogger
from f5lite.train.objective import Network
from f5lite.train.prompts import PromptSet, SpokenPrompt, prompt_means
from f5lite.train.samples import SampleLogger
from f5lite.train.validation import ValidationSet, find_val_dir, load_validation_set

log = logging.getLogger(__name__)

"""One JSON line per evaluation, in `RUN_DIR/logs`."""

Weights = Callable[[], dict[str, torch.Tensor]]


def validation_due(ev: TrainEvalConfig, update: int) -> bool:
    """Whether the validation loss is computed after `update` (when there is validation data)."""
    return bool(ev.every) and update % ev.every == 0


def prompts_due(ev: TrainEvalConfig, update: int) -> bool:
    """Whether the prompts are spoken after `update`."""
    return bool(ev.sample_every) and update % ev.sample_every == 0


class Evaluator:
    """Rank 0's evaluation state, loaded at start-up so that a bad setting stops the run before it trains.

    Args:
        cfg: the run's config.
        encoder: the run's text encoder.
        device: where to evaluate.
        autocast: the training's mixed-precision context (for the validation loss).
        log_dir: where `eval.jsonl` goes (`RUN_DIR/logs`).
        network: the flow network being trained (its EMA and online weights are what is evaluated).
        duration: the duration predictor trained alongside, if any.

    Raises:
        ValueError: the validation data, the prompts, a metric backend or the vocoder cannot be loaded, or
            `ckpt.best_metric` needs data that is not there.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        encoder: TextEncoder,
        device: torch.device,
        autocast: Callable[[], contextlib.AbstractContextManager[None]],
        log_dir: Path,
        network: Network,
        duration: DurationPredictor | None = None,
    ) -> None:
        self.ev, self.sample_every = cfg.eval, cfg.logger.sample_every  # what `run` reads of the config
        self.network = network
        self.duration = duration
        self.device = device
        self.autocast = autocast
        self.log_path = log_dir / EVAL_LOG
        # No storage: the weights to evaluate are assigned to it by `_load` and let go by `_unload`.
        with torch.device("meta"):
            self.backbone: nn.Module = run_backbone(cfg, build_backbone_from_config(cfg.model, encoder.num_embeds))
        self.backbone.eval().requires_grad_(False)
        self._loaded: tuple[str, int] | None = None
        ev = cfg.eval
        val_dir = find_val_dir(cfg.data, ev)
        self.validation: ValidationSet | None = None
        if ev.every and val_dir is not None:
            self.validation = load_validation_set(
                val_dir,
                encoder,
                mel_type=cfg.data.mel_type,
                seed=ev.seed,
                max_utterances=ev.max_utterances,
                time_bins=ev.time_bins,
                frames_per_batch=cfg.data.frames_per_gpu,
                max_samples=cfg.data.max_samples,
            )
            log.info("validation: %d utterances of %s every %d updates", self.validation.size, val_dir, ev.every)
        elif ev.every:
            log.info("no validation data (eval.val_dir, or DATA_DIR/val from f5lite-prepare --val-count): no val/loss")
        if self.validation is None and (cfg.ckpt.keep_best or ev.patience) and cfg.ckpt.best_metric.startswith("val/"):
            raise ValueError(
                f"ckpt.best_metric={cfg.ckpt.best_metric} needs validation data: give eval.val_dir=PATH or prepare "
                "the data with f5lite-prepare --val-count N"
            )
        self.encoder = encoder
        self.duration_cases = (
            load_duration_cases(cfg.data, ev) if ev.every and cfg.duration.train == "alongside" else []
        )
        if self.duration_cases:
            log.info("duration: %d held-out rows measured every %d updates", len(self.duration_cases), ev.every)
        vocoder = load_run_vocoder(cfg.sample, device) if cfg.logger.sample_every or ev.sample_every else None
        self.samples: SampleLogger | None = None
        if vocoder is not None and cfg.logger.sample_every:
            self.samples = SampleLogger(cfg.sample, cfg.seed, self.backbone, vocoder, device)
        self.prompts: PromptSet | None = None
        if ev.sample_every:
            assert vocoder is not None
            path = ev.prompts
            if path is None and val_dir is not None and (val_dir / VAL_TESTSET_NAME).is_file():
                path = str(val_dir / VAL_TESTSET_NAME)
            if path is None:
                raise ValueError(
                    "eval.sample_every is set but there are no prompts: give eval.prompts=FILE (a test set, see "
                    "f5lite-eval) or prepare the data with f5lite-prepare --val-count N, which writes val/testset.txt"
                )
            self.prompts = PromptSet(ev, cfg.sample, cfg.data.mel_type, path, self.backbone, encoder, vocoder, device)
            log.info("prompts: %d rows of %s every %d updates", len(self.prompts.prompts), path, ev.sample_every)

    def run(self, update: int, logger: MetricLogger, batch: Batch) -> dict[str, float]:
        """Do what is due after `update`: training sample, validation loss and duration errors, prompts; log them.

        Args:
            update: the optimizer update just done.
            logger: the metric logger.
            batch: the update's first batch (for the training sample).

        Returns:
            The logged numbers (`val/loss`, `val/loss_t0.00-0.25`, `val/duration_error`, `prompts/wer`, ...); empty
            when nothing was due.
        """
        try:
            return self._run(update, logger, batch)
        finally:
            self._unload()

    def _run(self, update: int, logger: MetricLogger, batch: Batch) -> dict[str, float]:
        ev, ema_weights, online_weights = self.ev, self.network.ema_weights, self.network.online_weights
        if self.samples is not None and update % self.sample_every == 0:
            self._load("ema", update, ema_weights)
            self.samples.log(logger, batch, update)
        results: dict[str, float] = {}
        if self.validation is not None and validation_due(ev, update):
            start = time.perf_counter()
            self._load("ema", update, ema_weights)
            results.update({f"val/{k}": v for k, v in self._validate().items()})
            if ev.online:
                self._load("online", update, online_weights)
                online = self._validate()
                results.update({f"val/{k.replace('loss', 'loss_online', 1)}": v for k, v in online.items()})
            results["eval/val_seconds"] = time.perf_counter() - start
        if self.duration is not None and self.duration_cases and validation_due(ev, update):
            results.update(validation_errors(self.duration_cases, self.duration, self.encoder))
        if self.prompts is not None and prompts_due(ev, update):
            start = time.perf_counter()
            self._load("ema", update, ema_weights)

            def log_prompt(prompt: SpokenPrompt) -> None:
                logger.log_sample(prompt.mel, prompt.audio, SAMPLE_RATE, update, tag=f"{PROMPT_PREFIX}{prompt.id}")

            results.update(prompt_means(self.prompts.speak(log_prompt)))
            results["eval/prompts_seconds"] = time.perf_counter() - start
        if results:
            logger.log(results, update)
            self._record(update, results)
        return results

    def _validate(self) -> dict[str, float]:
        assert self.validation is not None
        return self.validation.evaluate(self.backbone, self.device, self.autocast)

    def _load(self, kind: str, update: int, weights: Weights) -> None:
        """Assign the weights (in place; copied only to reach the evaluation device) unless already held."""
        if self._loaded != (kind, update):
            placed = {k: v.detach().to(self.device) for k, v in weights().items()}
            self.backbone.load_state_dict(placed, assign=True)
            self._loaded = (kind, update)

    def _unload(self) -> None:
        """Let the weights go (back to the meta device): an evaluation's copies are freed, nothing is held."""
        if self._loaded is not None:
            meta = {k: torch.empty_like(v, device="meta") for k, v in self.backbone.state_dict().items()}
            self.backbone.load_state_dict(meta, assign=True)
            self._loaded = None

    def _record(self, update: int, results: dict[str, float]) -> None:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in results.items())
        log.info("update %d: %s", update, shown)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        row = {"update": update, **{k: (None if math.isnan(v) else v) for k, v in results.items()}}
        with open(self.log_path, "a", encoding="utf-8") as file:
            file.write(json.dumps(row) + "\n")


def load_run_vocoder(sample: SampleConfig, device: torch.device) -> Vocoder:
    """The vocoder of `sample.vocoder`, loaded at start-up so a missing one stops the run before training.

    Raises:
        ValueError: the vocoder cannot be loaded (one line, with what to do).
    """
    source = None if sample.vocoder == "griffin_lim" else sample.vocoder_source
    try:
        return load_vocoder(sample.vocoder, source, device)
    except OSError as err:
        raise ValueError(
            f"sample.vocoder={sample.vocoder} cannot be loaded from sample.vocoder_source={source!r} for "
            f"training samples, prompts and grpo rollouts ({err}); give a local Vocos directory, "
            "sample.vocoder=griffin_lim, or turn logger.sample_every and eval.sample_every off"
        ) from None

"""The training loop: accelerate for devices and processes, our own optimizations, checkpoints and resume.

The model is set up by `f5lite.train.setup` (build, pretrained weights, LoRA, EMA, activation checkpointing,
compile, optimizer: the order is documented there), then wrapped in its objective (the flow objective `CFM`, or
`Distillation` or `Grpo` when `distill.teacher` or `grpo.prompts` is set) and prepared by accelerate with the
optimizer; the run resumes from the newest intact checkpoint in `RUN_DIR/checkpoints`, if any.

Per update nothing is read back to the host: the loss is summed on the device and fetched every `logger.every`
updates, a non-finite loss or gradient skips the update on the device (the fused optimizer's `found_inf`, the
learning rate driven by the device-side count of applied updates, the EMA weighted by the same flag), and
randomness is derived from (seed, update, rank, micro-batch) so that resume is exact without saving RNG state.

Across ranks, every decision is made once and shared (`f5lite.train.ranks`): rank 0 takes the run directory's lock,
checks the directory and picks, verifies and broadcasts the checkpoint to resume; a stop request seen by any rank
is agreed by all every `ckpt.stop_check_every` updates, so every rank stops after the same update. Nothing in the run
directory changes until everything that could refuse the launch has been checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
from torch import nn
from tqdm import tqdm

from f5lite.config import TrainConfig
from f5lite.config.schema import PRECISION_AUTO, PROMPT_PREFIX
from f5lite.data.collate import Batch
from f5lite.data.loader import TrainData, build_train_data
from f5lite.models.attention import describe_sdpa, sdpa_backend
from f5lite.models.cfm import CFM
from f5lite.models.distill import StudentBackbone
from f5lite.models.packing import describe_packing
from f5lite.storage.lock import RunLock
from f5lite.storage.lora import LoraSettings, merge_lora
from f5lite.storage.model_sources import LoadedSource
from f5lite.storage.rundir import (
    CHECKPOINTS,
    EXPORT,
    LOGS,
    check_run_dir,
    identity_hash,
    write_run_files,
)
from f5lite.storage.store import (
    DURATION_OPTIMIZER,
    DURATION_TENSORS,
    DURATION_UPDATES,
    SCORE,
    Checkpoint,
    CheckpointStore,
)
from f5lite.storage.tree import flatten, unflatten
from f5lite.text.vocab import vocab_hash
from f5lite.train.best import BestTracker
from f5lite.train.distill import (
    TEACHER_GROUP,
    Distillation,
    adopt_teacher,
    check_teacher_vocab,
    load_teacher,
    make_distillation,
)
from f5lite.train.duration import DurationTraining
from f5lite.train.evaluation import Evaluator, prompts_due, validation_due
from f5lite.train.export import export_run
from f5lite.train.grpo import Grpo, adopt_policy, load_policy, make_grpo
from f5lite.train.lifecycle import TrainingStopped as TrainingStopped  # re-exported: f5lite.train.TrainingStopped
from f5lite.train.lifecycle import close_launch, stop_after_checkpoint
from f5lite.train.loggers import MetricLogger, make_logger
from f5lite.train.precision import choose_precision
from f5lite.train.ranks import agree, any_rank, broadcast_tensors, check_distributed_type, distributed
from f5lite.train.samples import SampleLogger
from f5lite.train.schedule import lr_factor
from f5lite.train.seeding import seed_step
from f5lite.train.setup import build_model, make_optimizer
from f5lite.train.signals import StopRequest

log = logging.getLogger(__name__)


class BadUpdatesError(RuntimeError):
    """Too many updates in a row had a non-finite loss or gradient."""


def bad_update(loss_finite: torch.Tensor, applied: torch.Tensor, grad_scaler: bool) -> torch.Tensor:
    """Whether an update counts as bad (towards `optim.max_bad_updates`), on the device.

    Without a gradient scaler (fp32, bf16) every skipped update is bad. With one (fp16), a non-finite gradient
    under a finite loss is the scaler's normal overflow: it skips the step and lowers its scale, and early in a run
    that happens several times in a row; only a non-finite loss is bad then.

    Args:
        loss_finite: 0-d bool, the update's loss is finite.
        applied: 0-d bool, the optimizer applied the update (finite loss and gradients).
        grad_scaler: whether a gradient scaler (fp16) is in use.
    """
    return ~loss_finite if grad_scaler else ~applied


def make_accelerator(cfg: TrainConfig) -> Accelerator:
    """The run's `Accelerator`: the GPU when there is one, `perf.precision`, DDP gradients in the buckets.

    `perf.precision` is resolved here (`choose_precision`), once per run, and the choice logged in one line on
    rank 0 when `auto` decided or an explicit bf16 is emulated.

    `gradient_as_bucket_view` makes each parameter's `.grad` a view into DDP's all-reduce bucket, so the gradients
    exist once instead of twice (the buckets and `.grad`): one model's worth of memory less, and no copy between
    them after each all-reduce. Nothing here detaches or replaces `.grad` in place, which such views forbid.
    """
    cuda = torch.cuda.is_available()
    choice = choose_precision(cfg.perf.precision, torch.device("cuda" if cuda else "cpu"))
    accelerator = Accelerator(
        cpu=not cuda,
        mixed_precision=choice.precision,
        step_scheduler_with_optimizer=False,
        kwargs_handlers=[DistributedDataParallelKwargs(gradient_as_bucket_view=True)],
    )
    if choice.line and accelerator.is_main_process:
        (log.warning if choice.warning else log.info)(choice.line)
    return accelerator


class Trainer:
    """One training run, from a composed `TrainConfig`."""

    def __init__(self, cfg: TrainConfig, accelerator: Accelerator | None = None) -> None:
        """Set up data, model, optimizations, optimizer and checkpoints, and resume if a checkpoint exists.

        Everything that can refuse the launch (the run directory's lock, its config and vocab, the checkpoint's
        identity, integrity and sampler settings, the sample vocoder) is checked before anything in the run
        directory is written, so a refused launch leaves it as it was.

        Args:
            cfg: the composed config.
            accelerator: an existing `Accelerator` (tests pass one); by default one is made from `cfg.perf`.

        Raises:
            ValueError: a setting that cannot work (data directory, a run directory in use or of another run, an
                unsupported accelerate mode, ...), on every rank alike.
        """
        self.teacher: LoadedSource | None = None
        if cfg.grpo.prompts:  # RL improves the model of init.weights: its architecture, tokenizer and mel type
            cfg = adopt_policy(cfg, load_policy(cfg))
        if cfg.distill.teacher:  # the student is the teacher's architecture, from the teacher's weights
            self.teacher = load_teacher(cfg)
            cfg = adopt_teacher(cfg, self.teacher)
        self.acc = accelerator or make_accelerator(cfg)
        if cfg.perf.precision == PRECISION_AUTO:  # from here on, what accelerate runs (the run directory records it)
            cfg = dataclasses.replace(cfg, perf=dataclasses.replace(cfg.perf, precision=self.acc.mixed_precision))
        self.cfg = cfg
        check_distributed_type(self.acc.distributed_type)
        self.device = self.acc.device
        self.rank = self.acc.process_index
        self.run_dir = Path(cfg.run_dir).resolve()
        self.main = self.acc.is_main_process
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = cfg.perf.tf32
            torch.backends.cudnn.allow_tf32 = cfg.perf.tf32

        self.data: TrainData = build_train_data(
            cfg.data,
            seed=cfg.seed,
            rank=self.rank,
            num_replicas=self.acc.num_processes,
            pin_memory=cfg.perf.pin_memory and self.device.type == "cuda",
        )
        if self.teacher is not None:
            check_teacher_vocab(self.teacher, self.data.encoder.vocab)
        self.identity = identity_hash(cfg)
        self.vocab_hash = vocab_hash(self.data.encoder.vocab)
        self.lock = RunLock(self.run_dir)
        agree(self.main, self.lock.acquire)
        try:
            self._set_up()
        finally:
            self.lock.release()  # taken again by `fit`

    def _set_up(self) -> None:
        cfg, vocab = self.cfg, self.data.encoder.vocab
        changed = agree(self.main, lambda: check_run_dir(self.run_dir, cfg, vocab))
        if changed and self.main:
            log.warning("resuming %s with changed settings: %s", self.run_dir, ", ".join(changed))
        setup = build_model(cfg, self.data.encoder.num_embeds, vocab, self.device, with_ema=self.main)
        if self.main and setup.grown:
            log.info("text embedding grew by %d rows for tokens the pretrained vocab lacks", setup.grown)
        self.backbone, self.trainable, self.ema = setup.backbone, setup.trainable, setup.ema
        optimizer = make_optimizer(cfg, self.backbone, self.device)
        objective: nn.Module = CFM(self.backbone)
        self.distillation: Distillation | None = None
        if self.teacher is not None:
            self.distillation = make_distillation(cast(StudentBackbone, self.backbone), self.teacher, cfg)
            objective = self.distillation
            if self.main and self.distillation.follow is not None:
                log.info(
                    "distillation, second stage: the teacher is an average of the student (decay %g), starting at %s",
                    self.distillation.follow,
                    cfg.distill.teacher,
                )
        self.grpo: Grpo | None = None
        if cfg.grpo.prompts:
            self.grpo = make_grpo(cfg, self.backbone, self.data.encoder, self.device)
            objective = self.grpo
        self.model, self.optimizer = self.acc.prepare(objective, optimizer)
        self.duration: DurationTraining | None = None
        if cfg.duration.train == "alongside":
            self.duration = DurationTraining(cfg, self.data.encoder.num_embeds, self.device, self._reduce())
        self._window_duration = torch.zeros((), device=self.device)

        self.update = 0
        self.applied = torch.zeros((), dtype=torch.int64, device=self.device)
        self.bad_total = torch.zeros((), dtype=torch.int64, device=self.device)
        self.bad_streak = torch.zeros((), dtype=torch.int64, device=self.device)
        self.store = CheckpointStore(
            self.run_dir / CHECKPOINTS,
            cfg.ckpt.keep_last,
            cfg.ckpt.async_save,
            self.main,
            keep_best=cfg.ckpt.keep_best,
            best_metric=cfg.ckpt.best_metric,
        )
        self._consumed = 0
        self._window_ok: list[torch.Tensor] = []
        self._streak_before_window = 0  # bad updates in a row at the start of the current logging window
        self.best = BestTracker(cfg.ckpt.best_metric, cfg.eval.patience)
        self._score: float | None = None  # `ckpt.best_metric` measured at the current update, if it was
        self.finished = False  # stopped early: a relaunch has nothing left to train
        self.evaluator: Evaluator | None = None
        agree(self.main, self._make_evaluator)
        self._resume()
        if self.main:  # everything that could refuse this launch has passed: now the run directory may change
            write_run_files(self.run_dir, cfg, vocab)
            self.store.tidy()
            log.info("attention: %s", self._sdpa_kernel())  # once, and only for a launch that goes ahead
            if self.cfg.perf.pack:
                log.info("attention: %s", describe_packing(self.device, self._attention_dtype()))
        self.acc.wait_for_everyone()

    def _reduce(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """Mean across ranks (accelerate's all-reduce), or None in a single process."""
        if not distributed():
            return None
        return lambda tensor: self.acc.reduce(tensor, reduction="mean")

    def _make_evaluator(self) -> None:
        """Rank 0: load the validation data, prompts, metrics and vocoder (failing here, before training)."""
        self.evaluator = Evaluator(self.cfg, self.data.encoder, self.device, self.acc.autocast, self.run_dir / LOGS)

    @property
    def samples(self) -> SampleLogger | None:
        """The training-sample logger (rank 0, with `logger.sample_every`)."""
        return None if self.evaluator is None else self.evaluator.samples

    # ------------------------------------------------------------------------------------------ checkpoints

    def _resume(self) -> None:
        """Rank 0 picks and verifies the newest intact checkpoint; every rank loads what rank 0 read."""
        picked: list[Checkpoint] = []
        meta = agree(self.main, lambda: self._pick_checkpoint(picked))
        if meta is None:
            return
        ckpt = picked[0] if picked else None
        model = broadcast_tensors(ckpt.tensors["model"] if ckpt else None, self.device)
        self.backbone.load_state_dict(model, strict=self.trainable is None)
        optimizer = broadcast_tensors(ckpt.tensors.get("optimizer", {}) if ckpt else None, self.device)
        self.optimizer.load_state_dict(unflatten(meta["optimizer"], optimizer))
        self.update = int(meta["update"])
        if self.ema is not None:
            assert ckpt is not None
            self.ema.load_state_dict(ckpt.tensors["ema"], step=int(meta["ema_step"]), calls=self.update)
        if self.distillation is not None and self.distillation.follow is not None:
            teacher = broadcast_tensors(ckpt.tensors[TEACHER_GROUP] if ckpt else None, self.device)
            self.distillation.teacher.load_state_dict(teacher)
        self._resume_duration(ckpt, meta)
        self.data.sampler.load_state_dict(meta["sampler"])
        self._consumed = self.data.sampler.position  # rounds of this epoch already used (0 after a change of ranks)
        self.applied.fill_(int(meta["applied"]))
        self.bad_total.fill_(int(meta["bad_total"]))
        self.bad_streak.fill_(int(meta["bad_streak"]))
        self._streak_before_window = int(meta["bad_streak"])
        self.best.load_state_dict(meta.get("best"))
        self.finished = bool(meta.get("finished", False))
        if self.main:
            log.info("resumed from %s (update %d)", picked[0].path, self.update)

    def _resume_duration(self, ckpt: Checkpoint | None, meta: dict[str, Any]) -> None:
        """Load the duration predictor's state, or start it afresh when the checkpoint has none."""
        if self.duration is None:
            return
        if DURATION_UPDATES not in meta:
            if self.main:
                log.warning(
                    "the checkpoint has no duration predictor: it starts from scratch at update %d", meta["update"]
                )
            return
        groups = {
            key: broadcast_tensors(ckpt.tensors[key] if ckpt else None, self.device)
            for key in (DURATION_TENSORS, DURATION_OPTIMIZER)
        }
        self.duration.load_state(groups, meta)

    def _pick_checkpoint(self, picked: list[Checkpoint]) -> dict[str, Any] | None:
        """Rank 0: the newest intact checkpoint's metadata, after checking this launch can continue it."""
        ckpt = self.store.load_latest()
        if ckpt is None:
            return None
        meta = ckpt.meta
        if meta.get("identity") != self.identity:
            raise ValueError(
                f"checkpoint {ckpt.path} was trained with another architecture, tokenizer or mel type; "
                "give another run_dir to start a new run"
            )
        if "vocab" in meta and meta["vocab"] != self.vocab_hash:
            raise ValueError(
                f"checkpoint {ckpt.path} was trained with another vocab than data.dir's vocab.txt (its text ids would "
                "mean other tokens); give another run_dir to start a new run"
            )
        if self.trainable is not None and set(ckpt.tensors["model"]) != set(self.trainable):
            raise ValueError(f"checkpoint {ckpt.path} does not hold this run's LoRA adapters")
        self.data.sampler.load_state_dict(meta["sampler"])  # refuses other data or batching settings
        picked.append(ckpt)
        return meta

    def save(self, timeout: float | None = None) -> bool:
        """Write a training checkpoint of the current update (rank 0; asynchronously when `ckpt.async_save`).

        Args:
            timeout: seconds to wait at most (for the previous save and, unless asynchronous, this one).

        Returns:
            False when the timeout passed first; the newest committed checkpoint is then still intact.
        """
        if not self.main:
            return True
        assert self.ema is not None
        skeleton, opt_tensors = flatten(self.optimizer.state_dict(), prefix="optimizer")
        meta: dict[str, Any] = {
            "update": self.update,
            "applied": int(self.applied.item()),
            "bad_total": int(self.bad_total.item()),
            "bad_streak": int(self.bad_streak.item()),
            "ema_step": int(self.ema.step),
            "sampler": self.data.sampler.state_dict(self._consumed),
            "optimizer": skeleton,
            "identity": self.identity,
            "vocab": self.vocab_hash,
            "torch": torch.__version__,
            "best": self.best.state_dict(),
            "finished": self.finished,
        }
        if self._score is not None:
            meta[SCORE] = {"metric": self.best.metric, "value": self._score, "lower_is_better": self.best.lower}
        model = self.backbone.state_dict()
        if self.trainable is not None:  # the frozen base comes back from init.weights
            model = {k: model[k] for k in self.trainable}
        tensors = {"model": model, "ema": self.ema.state_dict(), "optimizer": opt_tensors}
        if self.distillation is not None and self.distillation.follow is not None:
            tensors[TEACHER_GROUP] = self.distillation.teacher.state_dict()
        if self.duration is not None:
            groups, duration_meta = self.duration.state()
            tensors.update(groups)
            meta.update(duration_meta)
        return self.store.save(self.update, tensors, meta, timeout=timeout)

    # ------------------------------------------------------------------------------------------------ steps

    def _sdpa_kernel(self) -> str:
        """Which attention kernel the training step's attention runs, for the start-up log line."""
        model = self.cfg.model
        return describe_sdpa(
            self.cfg.perf.sdpa_backend,
            self.device,
            self._attention_dtype(),
            model.heads,
            model.dim_head,
            bool(model.attn_mask_enabled),
        )

    def _attention_dtype(self) -> torch.dtype:
        """The dtype attention sees: the autocast dtype under mixed precision."""
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.cfg.perf.precision, torch.float32)

    def _attention(self) -> contextlib.AbstractContextManager[None]:
        return sdpa_backend(self.cfg.perf.sdpa_backend)

    def train_update(self, batches: list[Batch]) -> torch.Tensor:
        """One optimizer update over `grad_accum` micro-batches: `forward_backward`, then `optimizer_step`.

        Args:
            batches: the micro-batches (`len(batches)` of them are averaged).

        Returns:
            The mean loss as a 0-d device tensor (not synchronized).
        """
        mean = self.forward_backward(batches)
        self.optimizer_step(mean)
        return mean

    def forward_backward(self, batches: list[Batch]) -> torch.Tensor:
        """Accumulate the gradient of the mean of the micro-batches' losses into the parameters' `.grad`.

        Each micro-batch's loss is a mean over its own span frames (F5-TTS's per-batch mean); the update's
        gradient is the mean of those, as accelerate's gradient accumulation gives.

        Args:
            batches: the micro-batches of one update.

        Returns:
            The mean loss as a 0-d float32 device tensor (not synchronized).
        """
        total = torch.zeros((), device=self.device)
        duration = torch.zeros((), device=self.device)
        for micro, batch in enumerate(batches):
            generator = seed_step(self.cfg.seed, self.update, self.rank, micro, self.device)
            batch = batch.to(self.device, non_blocking=True)
            last = micro == len(batches) - 1
            sync = contextlib.nullcontext() if last else self.acc.no_sync(self.model)
            with sync, self._attention():
                loss = self.model(batch.mel, batch.text_ids, batch.mel_lengths, generator=generator)
                self.acc.backward(loss / len(batches))
            total = total + loss.detach().float()
            if self.duration is not None:  # the same batch teaches the duration predictor (`duration.train`)
                duration = duration + self.duration.backward(batch, 1.0 / len(batches))
        if self.duration is not None:
            self._window_duration += duration / len(batches)
        return total / len(batches)

    def optimizer_step(self, loss: torch.Tensor) -> torch.Tensor:
        """Clip, step the optimizer, advance the schedule and the EMA; all skipped on the device when not finite.

        Args:
            loss: the update's mean loss from `forward_backward`.

        Returns:
            0-d bool device tensor: whether the update was applied.
        """
        cfg = self.cfg
        max_norm = cfg.optim.max_grad_norm if cfg.optim.max_grad_norm > 0 else math.inf
        grad_norm = self.acc.clip_grad_norm_(self.model.parameters(), max_norm)
        loss_finite = torch.isfinite(loss)
        finite = loss_finite & torch.isfinite(torch.as_tensor(grad_norm, device=self.device))
        factor = lr_factor(self.applied, cfg.optim.warmup_updates, cfg.optim.max_updates)
        for group in self.optimizer.param_groups:
            group["lr"] = (cfg.optim.lr * factor).to(self.device)
        if self.acc.scaler is None:
            # The fused optimizer skips the whole update on the device when found_inf is set (no host sync).
            self.optimizer.optimizer.found_inf = (~finite).float()
            self.optimizer.optimizer.grad_scale = None
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        bad = bad_update(loss_finite, finite, self.acc.scaler is not None)
        self.applied += finite.long()
        self.bad_total += bad.long()
        self.bad_streak = (self.bad_streak + 1) * bad.long()
        if self.ema is not None:  # rank 0 only: the other ranks' averages would never be used
            self.ema.update(self.backbone, finite)
        if self.distillation is not None:  # every rank: each computes its own targets with the teacher
            self.distillation.follow_student(finite)
        if self.duration is not None:
            self.duration.step()
        self.update += 1
        self._window_ok.append(~bad)
        return finite

    def _micro_batches(self) -> Iterator[list[Batch]]:
        """Groups of `grad_accum` batches across epochs; tracks the sampler position for checkpoints."""
        group: list[Batch] = []
        sampler = self.data.sampler
        sampler.seek(self._consumed)  # the loader's workers of an earlier `fit` may have read ahead
        while True:
            for batch in self.data.loader:
                self._consumed += 1
                group.append(batch)
                if len(group) == self.cfg.optim.grad_accum:
                    yield group
                    group = []
            sampler.set_epoch(sampler.epoch + 1)
            self._consumed = 0

    # ------------------------------------------------------------------------------------------------- loop

    def fit(self, until: int | None = None) -> None:
        """Train until `optim.max_updates`, then save and export.

        Args:
            until: stop earlier, after this many updates, with a checkpoint (training in stages; a later `fit`,
                in this process or a new one, resumes exactly there).

        Raises:
            TrainingStopped: a SIGTERM/SIGINT reached a rank; every rank stopped after the same update and a
                checkpoint of it was written (see `_stop`).
            BadUpdatesError: `optim.max_bad_updates` updates in a row were skipped.
            ValueError: the run directory is in use by another launch.
        """
        cfg = self.cfg
        agree(self.main, self.lock.acquire)
        stop = StopRequest()
        stop.install()
        logger: MetricLogger = MetricLogger()
        if self.main:
            logger = make_logger(cfg.logger.backend, self.run_dir / LOGS, cfg.logger.project, cfg.run_name, {})
        bar = tqdm(total=cfg.optim.max_updates, initial=self.update, disable=not self.main, desc=cfg.run_name)
        window_loss = torch.zeros((), device=self.device)
        window_frames, window_start, window_paths = 0, time.perf_counter(), []
        # Alone, the flag costs nothing to read; across ranks it takes an all-reduce, so only every few updates.
        check_every = cfg.ckpt.stop_check_every if distributed() else 1
        try:
            batches = self._micro_batches()
            last = cfg.optim.max_updates if until is None else min(until, cfg.optim.max_updates)
            if self.finished and self.main:
                log.info(
                    "%s stopped early at update %d (eval.patience): nothing left to train", cfg.run_name, self.update
                )
            while self.update < last and not self.finished:
                group = next(batches)
                window_loss = window_loss + self.train_update(group)
                window_frames += sum(int(b.mel_lengths.sum()) for b in group)
                window_paths.append([p for b in group for p in b.paths])
                bar.update(1)
                if self.update % cfg.logger.every == 0 or self.update == cfg.optim.max_updates:
                    self._log(logger, bar, window_loss / len(window_paths), window_frames, window_start, window_paths)
                    window_loss = torch.zeros((), device=self.device)
                    window_frames, window_start, window_paths = 0, time.perf_counter(), []
                self._evaluate(logger, group[0])
                if self.update % cfg.ckpt.every == 0 or self.update == last or self.finished:
                    self.save()
                if self.update % check_every == 0:
                    signum = any_rank(stop.signum or 0, self.device)
                    if signum:
                        self._stop(signum)
            self.store.wait()
            if (self.update >= cfg.optim.max_updates or self.finished) and self.main:
                export_run(self.run_dir, self.run_dir / EXPORT, dtype=cfg.ckpt.export_dtype)
        finally:
            close_launch(bar, stop, logger, self.data, self.store, self.lock)

    def _stop(self, signum: int) -> None:
        """Save the current update within `ckpt.stop_timeout_s` and stop (see `stop_after_checkpoint`).

        Raises:
            TrainingStopped: always, once the checkpoint is written.
        """
        save = lambda budget: self.save(timeout=budget)  # noqa: E731
        budget = self.cfg.ckpt.stop_timeout_s
        stop_after_checkpoint(
            signum, main=self.main, update=self.update, save=save, store=self.store, lock=self.lock, budget=budget
        )

    def ema_weights(self) -> dict[str, torch.Tensor]:
        """The EMA weights as a plain backbone state dict (LoRA adapters folded into the frozen base); rank 0."""
        assert self.ema is not None, "the EMA lives on rank 0 only"
        if self.trainable is None:
            return self.ema.state_dict()
        state = {k: v.detach() for k, v in self.backbone.state_dict().items()}
        state.update({k: v.to(state[k].device) for k, v in self.ema.state_dict().items()})
        return merge_lora(state, LoraSettings.from_config(self.cfg.finetune.lora).scaling)

    def online_weights(self) -> dict[str, torch.Tensor]:
        """The online (trained) weights as a plain backbone state dict (LoRA adapters folded in)."""
        state = {k: v.detach() for k, v in self.backbone.state_dict().items()}
        if self.trainable is None:
            return state
        return merge_lora(state, LoraSettings.from_config(self.cfg.finetune.lora).scaling)

    def _evaluate(self, logger: MetricLogger, batch: Batch) -> None:
        """Evaluate when due (rank 0); track `ckpt.best_metric`; stop early after `eval.patience` (all ranks)."""
        cfg = self.cfg
        self._score = None
        results = {}
        if self.evaluator is not None:
            predictor = None if self.duration is None else self.duration.predictor
            results = self.evaluator.run(self.update, logger, batch, self.ema_weights, self.online_weights, predictor)
        metric = cfg.ckpt.best_metric
        due = prompts_due if metric.startswith(PROMPT_PREFIX) else validation_due
        if not due(cfg, self.update) or not (cfg.ckpt.keep_best or cfg.eval.patience):
            return
        stop = 0
        if self.main:
            self._score = results.get(metric, math.nan)
            if self.best.observe(self._score, self.update):
                log.info("update %d: new best %s=%.4g", self.update, metric, self._score)
            stop = int(self.best.should_stop())
        if cfg.eval.patience and any_rank(stop, self.device):
            self.finished = True
            if self.main:
                log.info(
                    "stopping early: %s has not improved for %d evaluations (best %.4g at update %s)",
                    metric, cfg.eval.patience, self.best.value, self.best.update,
                )  # fmt: skip

    def _log(
        self, logger: MetricLogger, bar: tqdm, loss: torch.Tensor, frames: int, start: float, paths: list[list[str]]
    ) -> None:
        # The one host sync of a logging window.
        finite = torch.stack(self._window_ok).tolist()
        self._window_ok = []
        self.lock.heartbeat()
        first = self.update - len(finite) + 1
        # The longest run of skipped updates anywhere in the window (continuing the previous window's run): a run
        # that a good update ended before this check still stops training.
        run = longest = self._streak_before_window
        for offset, ok in enumerate(finite):
            if not ok:
                log.warning("update %d skipped: non-finite loss or gradient; batch: %s", first + offset, paths[offset])
            run = 0 if ok else run + 1
            longest = max(longest, run)
        self._streak_before_window = run
        skipped = int(self.bad_total.item())
        value = float(loss.item())
        lr = float(self.optimizer.param_groups[0]["lr"])
        rate = frames * self.acc.num_processes / max(time.perf_counter() - start, 1e-9)
        bar.set_postfix(loss=f"{value:.4f}", lr=f"{lr:.2e}", frames_s=f"{rate:.0f}")
        metrics = {"loss": value, "lr": lr, "frames_per_s": rate, "skipped_updates": skipped}
        if self.duration is not None:
            metrics["duration_loss"] = float(self._window_duration.item()) / len(finite)
            self._window_duration.zero_()
        if self.grpo is not None:
            metrics.update(self.grpo.take_window())
        logger.log(metrics, self.update)
        if longest >= self.cfg.optim.max_bad_updates:
            raise BadUpdatesError(
                f"{longest} updates in a row had a non-finite loss or gradient (optim.max_bad_updates="
                f"{self.cfg.optim.max_bad_updates}); the last checkpoint is intact, check the data and learning rate"
            )

"""The training loop: accelerate for devices and processes, our own optimizations, checkpoints and resume.

Every way f5lite trains runs here: the objective (`objective`, `f5lite.train.objective`) builds the network it
trains (a flow backbone set up by `f5lite.train.setup`, or the duration predictor), its loss module and optimizer,
which accelerate prepares; the loop asks it for each micro-batch's gradient, calls its hook after each update, and
saves and restores its own state with the checkpoints. The run resumes from the newest intact checkpoint in
`RUN_DIR/checkpoints`, if any.

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
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
from tqdm import tqdm

from f5lite.config import PerfConfig, TrainConfig, config_to_yaml
from f5lite.config.ckpt import PROMPT_PREFIX
from f5lite.config.perf import PRECISION_AUTO
from f5lite.data.collate import Batch
from f5lite.data.loader import TrainData, build_train_data
from f5lite.models.attention import describe_sdpa, sdpa_backend
from f5lite.models.packing import describe_packing
from f5lite.storage.lock import RunLock
from f5lite.storage.names import CHECKPOINTS, EMA_GROUP, EXPORT, LOGS, SCORE
from f5lite.storage.rundir import check_run_dir, identity_hash, write_run_files
from f5lite.storage.store import Checkpoint, CheckpointStore
from f5lite.storage.tree import flatten, unflatten
from f5lite.text.vocab import vocab_hash
from f5lite.train.best import BestTracker
from f5lite.train.evaluation import prompts_due, validation_due
from f5lite.train.export import export_run
from f5lite.train.lifecycle import TrainingStopped as TrainingStopped  # re-exported: f5lite.train.TrainingStopped
from f5lite.train.lifecycle import close_launch, stop_after_checkpoint
from f5lite.train.loggers import MetricLogger, make_logger
from f5lite.train.objective import Evaluation, Objective, prepare_objective
from f5lite.train.precision import PrecisionChoice, choose_precision
from f5lite.train.ranks import agree, any_rank, broadcast_tensors, check_distributed_type, distributed
from f5lite.train.schedule import lr_factor
from f5lite.train.seeding import seed_step
from f5lite.train.signals import StopRequest
from f5lite.train.update import bad_update, optimizer_update

log = logging.getLogger(__name__)


class BadUpdatesError(RuntimeError):
    """Too many updates in a row had a non-finite loss or gradient."""


def make_accelerator(perf: PerfConfig) -> tuple[Accelerator, PrecisionChoice]:
    """The run's `Accelerator`: the GPU when there is one, `perf.precision`, DDP gradients in the buckets.

    `perf.precision` is resolved here (`choose_precision`), once per run; the choice comes back for the trainer to
    log (`announce_precision`) once nothing can refuse the launch any more, so that a refused launch stays one line.

    `gradient_as_bucket_view` makes each parameter's `.grad` a view into DDP's all-reduce bucket, so the gradients
    exist once instead of twice (the buckets and `.grad`): one model's worth of memory less, and no copy between
    them after each all-reduce. Nothing here detaches or replaces `.grad` in place, which such views forbid.
    """
    cuda = torch.cuda.is_available()
    choice = choose_precision(perf.precision, torch.device("cuda" if cuda else "cpu"))
    accelerator = Accelerator(
        cpu=not cuda,
        mixed_precision=choice.precision,
        step_scheduler_with_optimizer=False,
        kwargs_handlers=[DistributedDataParallelKwargs(gradient_as_bucket_view=True)],
    )
    return accelerator, choice


def announce_precision(choice: PrecisionChoice) -> None:
    """Log the precision choice in one line when `auto` decided or an explicit bf16 is emulated (rank 0 calls it)."""
    if choice.line:
        (log.warning if choice.warning else log.info)(choice.line)


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
        choice = None
        if accelerator is None:
            accelerator, choice = make_accelerator(cfg.perf)
        self.acc = accelerator
        if cfg.perf.precision == PRECISION_AUTO:  # from here on, what accelerate runs (the run directory records it)
            cfg = dataclasses.replace(cfg, perf=dataclasses.replace(cfg.perf, precision=self.acc.mixed_precision))
        # The objective's one look at the config: e.g. a distillation's student takes its teacher's architecture.
        prepared = prepare_objective(cfg)
        cfg = prepared.cfg
        if choice is not None and self.acc.is_main_process:
            announce_precision(choice)
        check_distributed_type(self.acc.distributed_type)
        # The sections the loop reads; the objective was handed the rest by its `Prepare`.
        self.seed, self.run_name, self.optim, self.ckpt = cfg.seed, cfg.run_name, cfg.optim, cfg.ckpt
        self.ev, self.perf, self.logger_settings, self.model_settings = cfg.eval, cfg.perf, cfg.logger, cfg.model
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
            audio=prepared.reads_audio,
        )
        self._build = prepared.build
        self._config_yaml = config_to_yaml(cfg)  # what the run directory records, and its identity
        self.identity = identity_hash(self._config_yaml)
        self.vocab_hash = vocab_hash(self.data.encoder.vocab)
        self.lock = RunLock(self.run_dir)
        agree(self.main, self.lock.acquire)
        try:
            self._set_up()
        finally:
            self.lock.release()  # taken again by `fit`

    def _set_up(self) -> None:
        config, vocab = self._config_yaml, self.data.encoder.vocab
        changed = agree(self.main, lambda: check_run_dir(self.run_dir, config, vocab))
        if changed and self.main:
            log.warning("resuming %s with changed settings: %s", self.run_dir, ", ".join(changed))
        self.objective: Objective = self._build(self.data.encoder, self.acc, self._reduce(), self.run_dir / LOGS)
        self.net = self.objective.network
        self.network, self.trainable, self.ema = self.net.weights, self.net.trainable, self.net.ema
        self.model, self.optimizer = self.acc.prepare(self.net.module, self.net.optimizer)

        self.update = 0
        self.applied = torch.zeros((), dtype=torch.int64, device=self.device)
        self.bad_total = torch.zeros((), dtype=torch.int64, device=self.device)
        self.bad_streak = torch.zeros((), dtype=torch.int64, device=self.device)
        ckpt = self.ckpt
        self.store = CheckpointStore(
            self.run_dir / CHECKPOINTS,
            ckpt.keep_last,
            ckpt.async_save,
            self.main,
            keep_best=ckpt.keep_best,
            best_metric=ckpt.best_metric,
        )
        self._consumed = 0
        self._window_ok: list[torch.Tensor] = []
        self._streak_before_window = 0  # bad updates in a row at the start of the current logging window
        self.best = BestTracker(ckpt.best_metric, self.ev.patience)
        self._score: float | None = None  # `ckpt.best_metric` measured at the current update, if it was
        self.finished = False  # stopped early: a relaunch has nothing left to train
        self.evaluator: Evaluation | None = None
        agree(self.main, self._make_evaluator)
        self._resume()
        if self.main:  # everything that could refuse this launch has passed: now the run directory may change
            write_run_files(self.run_dir, config, vocab)
            self.store.tidy()
            log.info("attention: %s", self._sdpa_kernel())  # once, and only for a launch that goes ahead
            if self.perf.pack:
                log.info("attention: %s", describe_packing(self.device, self._attention_dtype()))
        self.acc.wait_for_everyone()

    def _reduce(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """Mean across ranks (accelerate's all-reduce), or None in a single process."""
        if not distributed():
            return None
        return lambda tensor: self.acc.reduce(tensor, reduction="mean")

    def _make_evaluator(self) -> None:
        """Rank 0: load what the objective measures while training (failing here, before training)."""
        self.evaluator = self.objective.evaluation()

    # ------------------------------------------------------------------------------------------ checkpoints

    def _resume(self) -> None:
        """Rank 0 picks and verifies the newest intact checkpoint; every rank loads what rank 0 read."""
        picked: list[Checkpoint] = []
        meta = agree(self.main, lambda: self._pick_checkpoint(picked))
        if meta is None:
            return
        ckpt = picked[0] if picked else None

        def read(group: str) -> dict[str, torch.Tensor] | None:
            """A group of the checkpoint on this rank's device (rank 0 has it; the others receive it)."""
            present = agree(self.main, lambda: ckpt is not None and group in ckpt.tensors)
            return broadcast_tensors(ckpt.tensors[group] if ckpt else None, self.device) if present else None

        weights_group, optimizer_group = self.net.groups
        try:
            self.network.load_state_dict(read(weights_group) or {}, strict=self.trainable is None)
        except RuntimeError:
            raise ValueError(self.net.mismatch) from None
        self.optimizer.load_state_dict(unflatten(meta[optimizer_group], read(optimizer_group) or {}))
        self.update = int(meta["update"])
        if self.ema is not None:
            assert ckpt is not None
            self.ema.load_state_dict(ckpt.tensors[EMA_GROUP], step=int(meta["ema_step"]), calls=self.update)
        self.objective.load_state(read, meta)
        self.data.sampler.load_state_dict(meta["sampler"])
        self._consumed = self.data.sampler.position  # rounds of this epoch already used (0 after a change of ranks)
        # A predictor's checkpoint of before the one loop counted no skipped updates: its updates were applied.
        self.applied.fill_(int(meta.get("applied", meta["update"])))
        self.bad_total.fill_(int(meta.get("bad_total", 0)))
        self.bad_streak.fill_(int(meta.get("bad_streak", 0)))
        self._streak_before_window = int(meta.get("bad_streak", 0))
        self.best.load_state_dict(meta.get("best"))
        self.finished = bool(meta.get("finished", False))
        if self.main:
            log.info("resumed from %s (update %d)", picked[0].path, self.update)

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
        if self.trainable is not None and set(ckpt.tensors[self.net.groups[0]]) != set(self.trainable):
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
        weights_group, optimizer_group = self.net.groups
        skeleton, opt_tensors = flatten(self.optimizer.state_dict(), prefix=optimizer_group)
        meta: dict[str, Any] = {
            "update": self.update,
            "applied": int(self.applied.item()),
            "bad_total": int(self.bad_total.item()),
            "bad_streak": int(self.bad_streak.item()),
            "sampler": self.data.sampler.state_dict(self._consumed),
            optimizer_group: skeleton,
            "identity": self.identity,
            "vocab": self.vocab_hash,
            "torch": torch.__version__,
            "best": self.best.state_dict(),
            "finished": self.finished,
        }
        if self._score is not None:
            meta[SCORE] = {"metric": self.best.metric, "value": self._score, "lower_is_better": self.best.lower}
        model = self.network.state_dict()
        if self.trainable is not None:  # the frozen base comes back from init.weights
            model = {k: model[k] for k in self.trainable}
        tensors = {weights_group: model, optimizer_group: opt_tensors}
        if self.ema is not None:
            tensors[EMA_GROUP] = self.ema.state_dict()
            meta["ema_step"] = int(self.ema.step)
        groups, own = self.objective.state()
        tensors.update(groups)
        meta.update(own)
        return self.store.save(self.update, tensors, meta, timeout=timeout)

    # ------------------------------------------------------------------------------------------------ steps

    def _sdpa_kernel(self) -> str:
        """Which attention kernel the training step's attention runs, for the start-up log line."""
        model = self.model_settings
        return describe_sdpa(
            self.perf.sdpa_backend,
            self.device,
            self._attention_dtype(),
            model.heads,
            model.dim_head,
            bool(model.attn_mask_enabled),
        )

    def _attention_dtype(self) -> torch.dtype:
        """The dtype attention sees: the autocast dtype under mixed precision."""
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.perf.precision, torch.float32)

    def _attention(self) -> contextlib.AbstractContextManager[None]:
        return sdpa_backend(self.perf.sdpa_backend)

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
        for micro, batch in enumerate(batches):
            generator = seed_step(self.seed, self.update, self.rank, micro, self.device)
            batch = batch.to(self.device, non_blocking=True)
            last = micro == len(batches) - 1
            sync = contextlib.nullcontext() if last else self.acc.no_sync(self.model)
            with sync, self._attention():
                total = total + self.objective.backward(self.model, batch, generator, len(batches))
        return total / len(batches)

    def optimizer_step(self, loss: torch.Tensor) -> torch.Tensor:
        """Clip, step the optimizer, advance the schedule and the EMA; all skipped on the device when not finite.

        Args:
            loss: the update's mean loss from `forward_backward`.

        Returns:
            0-d bool device tensor: whether the update was applied.
        """
        factor = lr_factor(self.applied, self.optim.warmup_updates, self.optim.max_updates)
        lr = self.net.peak_lr * factor
        loss_finite, finite = optimizer_update(self.acc, self.model, self.optimizer, loss, self.net.max_grad_norm, lr)
        bad = bad_update(loss_finite, finite, self.acc.scaler is not None)
        self.applied += finite.long()
        self.bad_total += bad.long()
        self.bad_streak = (self.bad_streak + 1) * bad.long()
        if self.ema is not None:  # rank 0 only: the other ranks' averages would never be used
            self.ema.update(self.network, finite)
        self.objective.after_step(finite)
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
                if len(group) == self.optim.grad_accum:
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
        optim, ckpt = self.optim, self.ckpt
        agree(self.main, self.lock.acquire)
        stop = StopRequest()
        stop.install()
        logger: MetricLogger = MetricLogger()
        if self.main:
            logger = make_logger(
                self.logger_settings.backend, self.run_dir / LOGS, self.logger_settings.project, self.run_name, {}
            )
        bar = tqdm(total=optim.max_updates, initial=self.update, disable=not self.main, desc=self.run_name)
        window_loss = torch.zeros((), device=self.device)
        window_frames, window_start, window_paths = 0, time.perf_counter(), []
        # Alone, the flag costs nothing to read; across ranks it takes an all-reduce, so only every few updates.
        check_every = ckpt.stop_check_every if distributed() else 1
        try:
            batches = self._micro_batches()
            last = optim.max_updates if until is None else min(until, optim.max_updates)
            if self.finished and self.main:
                log.info(
                    "%s stopped early at update %d (eval.patience): nothing left to train", self.run_name, self.update
                )
            while self.update < last and not self.finished:
                group = next(batches)
                window_loss = window_loss + self.train_update(group)
                window_frames += sum(int(b.mel_lengths.sum()) for b in group)
                window_paths.append([p for b in group for p in b.paths])
                bar.update(1)
                if self.update % self.logger_settings.every == 0 or self.update == optim.max_updates:
                    self._log(logger, bar, window_loss / len(window_paths), window_frames, window_start, window_paths)
                    window_loss = torch.zeros((), device=self.device)
                    window_frames, window_start, window_paths = 0, time.perf_counter(), []
                self._evaluate(logger, group[0])
                if self.update % ckpt.every == 0 or self.update == last or self.finished:
                    self.save()
                if self.update % check_every == 0:
                    signum = any_rank(stop.signum or 0, self.device)
                    if signum:
                        self._stop(signum)
            self.store.wait()
            if (self.update >= optim.max_updates or self.finished) and self.main:
                export_run(self.run_dir, self.run_dir / EXPORT, dtype=ckpt.export_dtype)
        finally:
            close_launch(bar, stop, logger, self.data, self.store, self.lock)

    def _stop(self, signum: int) -> None:
        """Save the current update within `ckpt.stop_timeout_s` and stop (see `stop_after_checkpoint`).

        Raises:
            TrainingStopped: always, once the checkpoint is written.
        """
        save = lambda budget: self.save(timeout=budget)  # noqa: E731
        budget = self.ckpt.stop_timeout_s
        stop_after_checkpoint(
            signum, main=self.main, update=self.update, save=save, store=self.store, lock=self.lock, budget=budget
        )

    def _evaluate(self, logger: MetricLogger, batch: Batch) -> None:
        """Evaluate when due (rank 0); track `ckpt.best_metric`; stop early after `eval.patience` (all ranks)."""
        self._score = None
        results = {}
        if self.evaluator is not None:
            results = self.evaluator.run(self.update, logger, batch)
        metric = self.ckpt.best_metric
        due = prompts_due if metric.startswith(PROMPT_PREFIX) else validation_due
        if not due(self.ev, self.update) or not (self.ckpt.keep_best or self.ev.patience):
            return
        stop = 0
        if self.main:
            self._score = results.get(metric, math.nan)
            if self.best.observe(self._score, self.update):
                log.info("update %d: new best %s=%.4g", self.update, metric, self._score)
            stop = int(self.best.should_stop())
        if self.ev.patience and any_rank(stop, self.device):
            self.finished = True
            if self.main:
                log.info(
                    "stopping early: %s has not improved for %d evaluations (best %.4g at update %s)",
                    metric, self.ev.patience, self.best.value, self.best.update,
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
        metrics = {self.objective.loss_name: value, "lr": lr, "frames_per_s": rate, "skipped_updates": skipped}
        metrics.update(self.objective.window())
        logger.log(metrics, self.update)
        if longest >= self.optim.max_bad_updates:
            raise BadUpdatesError(
                f"{longest} updates in a row had a non-finite loss or gradient (optim.max_bad_updates="
                f"{self.optim.max_bad_updates}); the last checkpoint is intact, check the data and learning rate"
            )

"""Training the duration predictor alone (`duration.train=alone`, `+recipe=duration_small`; or by RL, `grpo`).

The data is read as for the flow model (every source `data.dir` takes, the same frame-budget batches) but without
audio: each batch holds text ids, mel lengths and speakers (`build_train_data(audio=False)`), so an epoch of even a
large corpus is a pass over its metadata. The run directory is a training run's: the frozen config and vocab, the
lock, atomic checkpoints (the predictor, its optimizer and the data position: a relaunch resumes exactly where
the last checkpoint was), a checkpoint of the last update on SIGTERM/SIGINT, and at the end an export,
`RUN_DIR/export`, which holds only the predictor (`f5lite.storage.duration_files`): `f5lite-infer duration=RUN_DIR/export`
uses it with any model. With `eval.every`, the median relative duration error of the predictor and of the byte
rule on the held-out test set (`val/duration_error`, `val/duration_error_rule`) is logged.

`duration.train=grpo` runs the same way with RL in the supervised loss's place (`f5lite.train.duration_grpo`): its
updates draw prompts rather than batches, and the log adds their mean rewards (`reward`, `reward_wer`, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from tqdm import tqdm

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.data.loader import build_train_data
from f5lite.storage.lock import RunLock
from f5lite.storage.rundir import CHECKPOINTS, EXPORT, LOGS, check_run_dir, identity_hash, write_run_files
from f5lite.storage.store import DURATION_OPTIMIZER, DURATION_TENSORS, Checkpoint, CheckpointStore
from f5lite.text.vocab import vocab_hash
from f5lite.train.duration import DurationTraining, load_duration_cases, load_start, validation_errors
from f5lite.train.duration_grpo import DurationGrpo, check_inputs, make_duration_grpo
from f5lite.train.evaluation import validation_due
from f5lite.train.export import export_run
from f5lite.train.lifecycle import close_launch, stop_after_checkpoint
from f5lite.train.loggers import MetricLogger, make_logger
from f5lite.train.ranks import agree, any_rank, broadcast_tensors, distributed
from f5lite.train.seeding import seed_step
from f5lite.train.signals import StopRequest
from f5lite.train.trainer import make_accelerator

log = logging.getLogger(__name__)


class DurationRun:
    """A run that trains only the duration predictor.

    Args:
        cfg: the composed config (`duration.train=alone`).
        accelerator: an existing `Accelerator` (tests pass one); by default one is made from `cfg.perf`.

    Raises:
        ValueError: the data, the run directory, the held-out test set or a checkpoint cannot be used (one line).
    """

    def __init__(self, cfg: TrainConfig, accelerator: Accelerator | None = None) -> None:
        self.cfg = cfg
        if cfg.duration.train == "grpo":
            check_inputs(cfg)
        self.acc = accelerator or make_accelerator(cfg)
        self.device = self.acc.device
        self.main = self.acc.is_main_process
        self.run_dir = Path(cfg.run_dir).resolve()
        self.data = build_train_data(
            cfg.data, seed=cfg.seed, rank=self.acc.process_index, num_replicas=self.acc.num_processes, audio=False
        )
        vocab = self.data.encoder.vocab
        self.identity = identity_hash(cfg)
        self.lock = RunLock(self.run_dir)
        agree(self.main, self.lock.acquire)
        try:
            agree(self.main, lambda: check_run_dir(self.run_dir, cfg, vocab))
            reduce = (lambda t: self.acc.reduce(t, reduction="mean")) if distributed() else None
            self.training = DurationTraining(cfg, self.data.encoder.num_embeds, self.device, reduce)
            self.objective: DurationGrpo | None = None
            if cfg.duration.init is not None:  # before `_resume`, whose checkpoint has the last word
                start = load_start(cfg, self.data.encoder, self.device)
                self.training.start_from(start)
                if cfg.duration.train == "grpo":
                    self.objective = make_duration_grpo(cfg, self.training.predictor, start, self.data.encoder)
            self.cases = agree(self.main, lambda: load_duration_cases(cfg) if cfg.eval.every else [])
            self.store = CheckpointStore(self.run_dir / CHECKPOINTS, cfg.ckpt.keep_last, cfg.ckpt.async_save, self.main)
            self.update = 0
            self._consumed = 0
            self._resume()
            if self.main:
                write_run_files(self.run_dir, cfg, vocab)
                self.store.tidy()
            self.acc.wait_for_everyone()
        finally:
            self.lock.release()

    def _resume(self) -> None:
        picked: list[Checkpoint] = []
        meta = agree(self.main, lambda: self._pick(picked))
        if meta is None:
            return
        ckpt = picked[0] if picked else None
        groups = {
            k: broadcast_tensors(ckpt.tensors[k] if ckpt else None, self.device)
            for k in (DURATION_TENSORS, DURATION_OPTIMIZER)
        }
        self.training.load_state(groups, meta)
        self.update = int(meta["update"])
        self.data.sampler.load_state_dict(meta["sampler"])
        self._consumed = self.data.sampler.position
        if self.main:
            log.info("resumed from %s (update %d)", picked[0].path, self.update)

    def _pick(self, picked: list[Checkpoint]) -> dict[str, Any] | None:
        ckpt = self.store.load_latest()
        if ckpt is None:
            return None
        if ckpt.meta.get("identity") != self.identity or ckpt.meta.get("vocab") != vocab_hash(self.data.encoder.vocab):
            raise ValueError(
                f"checkpoint {ckpt.path} was trained with other settings or another vocab; give another run_dir"
            )
        self.data.sampler.load_state_dict(ckpt.meta["sampler"])  # refuses other data or batching settings
        picked.append(ckpt)
        return ckpt.meta

    def save(self, timeout: float | None = None) -> bool:
        """Checkpoint the current update (rank 0); False when `timeout` passed first."""
        if not self.main:
            return True
        groups, meta = self.training.state()
        meta.update(
            update=self.update,
            sampler=self.data.sampler.state_dict(self._consumed),
            identity=self.identity,
            vocab=vocab_hash(self.data.encoder.vocab),
            torch=torch.__version__,
        )
        return self.store.save(self.update, dict(groups), meta, timeout=timeout)

    def _batches(self) -> Iterator[Batch]:
        sampler = self.data.sampler
        sampler.seek(self._consumed)
        while True:
            for batch in self.data.loader:
                self._consumed += 1
                yield batch
            sampler.set_epoch(sampler.epoch + 1)
            self._consumed = 0

    def fit(self, until: int | None = None) -> None:
        """Train until `optim.max_updates`, then save and export the predictor to `RUN_DIR/export`.

        Args:
            until: stop earlier, after this many updates, with a checkpoint (a later `fit`, in this process or a new
                one, resumes exactly there).

        Raises:
            TrainingStopped: a SIGTERM/SIGINT reached a rank; a checkpoint of the last update was written.
        """
        cfg = self.cfg
        agree(self.main, self.lock.acquire)
        stop = StopRequest()
        stop.install()
        logger = MetricLogger()
        if self.main:
            logger = make_logger(cfg.logger.backend, self.run_dir / LOGS, cfg.logger.project, cfg.run_name, {})
        bar = tqdm(total=cfg.optim.max_updates, initial=self.update, disable=not self.main, desc=cfg.run_name)
        window = torch.zeros((), device=self.device)
        window_updates = 0
        check_every = cfg.ckpt.stop_check_every if distributed() else 1
        try:
            batches = self._batches()
            last = cfg.optim.max_updates if until is None else min(until, cfg.optim.max_updates)
            while self.update < last:
                if self.objective is None:
                    window += self.training.backward(next(batches).to(self.device))
                else:  # RL draws its own prompts; the update's generator makes a resumed run draw the same
                    rank = self.acc.process_index
                    window += self.objective.backward(seed_step(cfg.seed, self.update, rank, 0, self.device))
                self.training.step()
                self.update += 1
                window_updates += 1
                bar.update(1)
                if self.update % cfg.logger.every == 0 or self.update == cfg.optim.max_updates:
                    loss = float(window.item()) / window_updates
                    bar.set_postfix(loss=f"{loss:.4f}")
                    rewards = self.objective.take_window() if self.objective is not None else {}
                    logger.log({"duration_loss": loss, **rewards}, self.update)
                    window.zero_()
                    window_updates = 0
                    self.lock.heartbeat()
                if self.main and self.cases and validation_due(cfg, self.update):
                    errors = validation_errors(self.cases, self.training.predictor, self.data.encoder)
                    logger.log(errors, self.update)
                    log.info("update %d: %s", self.update, ", ".join(f"{k}={v:.4f}" for k, v in errors.items()))
                if self.update % cfg.ckpt.every == 0 or self.update == last:
                    self.save()
                # Alone, the flag costs nothing to read; across ranks it takes an all-reduce, so only every few updates.
                if self.update % check_every == 0:
                    signum = any_rank(stop.signum or 0, self.device)
                    if signum:
                        self._stop(signum)
            self.store.wait()
            if self.update >= cfg.optim.max_updates and self.main:
                export_run(self.run_dir, self.run_dir / EXPORT)
        finally:
            close_launch(bar, stop, logger, self.data, self.store, self.lock)

    def _stop(self, signum: int) -> None:
        budget = self.cfg.ckpt.stop_timeout_s
        save = lambda seconds: self.save(timeout=seconds)  # noqa: E731
        stop_after_checkpoint(
            signum, main=self.main, update=self.update, save=save, store=self.store, lock=self.lock, budget=budget
        )

"""The duration predictor's training: alone (`objective=duration`), or alongside the flow model.

`objective=duration` trains only the predictor, on batches that carry text, lengths and speakers and no audio (an
epoch of even a large corpus is a pass over its metadata), through the one training loop: checkpoints, exact resume,
signals and the export, which holds only the predictor (`f5lite.storage.duration_files`): `f5lite-infer
duration=RUN_DIR/export` uses it with any model of the same vocab. With `eval.every`, the median relative duration
error of the predictor and of the byte rule on the held-out test set is logged (`val/duration_error`,
`val/duration_error_rule`).

`duration.train=alongside` (`DurationTraining`) trains one beside the flow model (`f5lite.train.flow`), on every
micro-batch the flow model learns from, with its own optimizer stepped after the flow model's; across ranks its
gradient is averaged with one all-reduce of the flattened gradient per update (accelerate's `reduce`).

Either way the predictor trains in float32 outside the flow model's autocast (it is tiny, and its loss is a log of a
sum over hundreds of tokens) with a fused AdamW of `duration.lr`, and a non-finite gradient skips the update on the
device. Nothing is read back to the host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from f5lite.config import DataConfig, OptimConfig
from f5lite.config.duration import DurationConfig
from f5lite.config.evaluation import TrainEvalConfig
from f5lite.data.collate import Batch
from f5lite.data.manifest import VAL_TESTSET_NAME
from f5lite.data.testset import read_testset
from f5lite.eval.duration import DurationCase, duration_cases, duration_errors
from f5lite.infer.duration import DurationEstimator
from f5lite.models.duration import DurationPredictor, duration_loss
from f5lite.storage.duration_files import DurationFileError, LoadedDuration, load_duration
from f5lite.storage.names import DURATION_OPTIMIZER, DURATION_TENSORS, DURATION_UPDATES
from f5lite.storage.tree import flatten, unflatten
from f5lite.text import TextEncoder
from f5lite.train.schedule import lr_factor
from f5lite.train.validation import find_val_dir

log = logging.getLogger(__name__)

MAX_GRAD_NORM = 1.0
"""Gradient clipping of the predictor (a fresh predictor's first gradients are large: every length is off)."""


def make_predictor(duration: DurationConfig, seed: int, num_embeds: int, device: torch.device) -> DurationPredictor:
    """A fresh predictor of `duration.*`: the same initial weights (from `seed`) on every rank and at every launch."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return DurationPredictor(num_embeds, duration.dim, duration.depth, duration.kernel_size).to(device)


def make_predictor_optimizer(lr: float, optim: OptimConfig, predictor: DurationPredictor) -> torch.optim.AdamW:
    """The predictor's fused AdamW: `lr` (`duration.lr`), the rest `optim`'s; the learning rate a device tensor."""
    device = next(predictor.parameters()).device
    return torch.optim.AdamW(
        predictor.parameters(),
        lr=torch.tensor(lr, device=device),
        betas=(optim.betas[0], optim.betas[1]),
        weight_decay=optim.weight_decay,
        eps=optim.eps,
        fused=True,
    )


class DurationTraining:
    """The duration predictor of a run, with its optimizer and learning-rate schedule.

    Args:
        duration: the predictor's architecture and peak learning rate.
        optim: the rest of the optimizer's settings and the schedule (`warmup_updates`, `max_updates`).
        seed: the run's seed (the predictor's initial weights).
        num_embeds: the text embedding's size (the run's vocab).
        device: where to train.
        reduce: averages a tensor across ranks (`Accelerator.reduce` with `mean`); None with one process.
    """

    def __init__(
        self,
        duration: DurationConfig,
        optim: OptimConfig,
        seed: int,
        num_embeds: int,
        device: torch.device,
        reduce: Callable[[Tensor], Tensor] | None,
    ) -> None:
        self.duration = duration
        self.optim = optim
        self.predictor = make_predictor(duration, seed, num_embeds, device)
        self.optimizer = make_predictor_optimizer(duration.lr, optim, self.predictor)
        self.reduce = reduce
        self.applied = torch.zeros((), dtype=torch.int64, device=device)

    def backward(self, batch: Batch, scale: float = 1.0) -> Tensor:
        """Accumulate the gradient of `scale` times the batch's loss.

        Args:
            batch: a batch on the predictor's device (its mels are not read).
            scale: the weight of this micro-batch (1 / micro-batches per update).

        Returns:
            The loss, a 0-d float32 device tensor (not synchronized).
        """
        with torch.autocast(batch.text_ids.device.type, enabled=False):
            loss = duration_loss(self.predictor(batch.text_ids), batch.mel_lengths, batch.speakers)
        (loss * scale).backward()
        return loss.detach()

    def step(self) -> Tensor:
        """Average the gradient across ranks, clip, step (skipped on the device when not finite), zero it.

        Returns:
            0-d bool device tensor: whether the update was applied.
        """
        params = [p for p in self.predictor.parameters() if p.grad is not None]
        if self.reduce is not None and params:
            flat = self.reduce(torch.cat([p.grad.flatten() for p in params]))  # type: ignore[union-attr]
            for p, g in zip(params, flat.split([p.numel() for p in params]), strict=True):
                p.grad.copy_(g.view_as(p))  # type: ignore[union-attr]
        norm = torch.nn.utils.clip_grad_norm_(self.predictor.parameters(), MAX_GRAD_NORM)
        finite = torch.isfinite(norm)
        factor = lr_factor(self.applied, self.optim.warmup_updates, self.optim.max_updates)
        for group in self.optimizer.param_groups:
            group["lr"] = (self.duration.lr * factor).to(self.applied.device)
        self.optimizer.found_inf = (~finite).float()  # type: ignore[attr-defined]
        self.optimizer.grad_scale = None  # type: ignore[attr-defined]
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.applied += finite.long()
        return finite

    def state(self) -> tuple[dict[str, dict[str, Tensor]], dict[str, Any]]:
        """The predictor's part of a checkpoint: tensor groups and metadata."""
        skeleton, tensors = flatten(self.optimizer.state_dict(), prefix=DURATION_OPTIMIZER)
        groups = {DURATION_TENSORS: self.predictor.state_dict(), DURATION_OPTIMIZER: tensors}
        return groups, {DURATION_OPTIMIZER: skeleton, DURATION_UPDATES: int(self.applied.item())}

    def resume(self, read: Callable[[str], dict[str, Tensor] | None], meta: dict[str, Any], *, main: bool) -> None:
        """Restore what `state` gave; a checkpoint without a predictor leaves this one fresh (rank 0 warns).

        Args:
            read: a checkpoint group on this rank's device.
            meta: the checkpoint's metadata.
            main: whether this is rank 0.

        Raises:
            ValueError: the checkpoint's predictor has other shapes than `duration.*` builds (one line).
        """
        if DURATION_UPDATES not in meta:
            if main:
                log.warning(
                    "the checkpoint has no duration predictor: it starts from scratch at update %d", meta["update"]
                )
            return
        weights, optimizer = read(DURATION_TENSORS), read(DURATION_OPTIMIZER)
        assert weights is not None and optimizer is not None
        load_predictor_weights(self.predictor, weights, self.duration, CHECKPOINT_MISMATCH)
        self.optimizer.load_state_dict(unflatten(meta[DURATION_OPTIMIZER], optimizer))
        self.applied.fill_(int(meta[DURATION_UPDATES]))


CHECKPOINT_MISMATCH = ("the checkpoint's duration predictor", "resume with the settings it was trained with")
"""What a checkpoint's predictor of other shapes is called, and the remedy (`load_predictor_weights`)."""


def predictor_mismatch(arch: DurationConfig, what: str, remedy: str) -> str:
    """The one-line error for a predictor whose shapes are not what `duration.*` builds."""
    return f"{what} does not fit duration.dim={arch.dim} depth={arch.depth} kernel_size={arch.kernel_size}; {remedy}"


def load_predictor_weights(
    predictor: DurationPredictor, state: dict[str, Tensor], duration: DurationConfig, names: tuple[str, str]
) -> None:
    """Load `state` into the predictor.

    Args:
        predictor: the run's predictor.
        state: the weights.
        duration: the run's `duration.*` (the architecture, for the error).
        names: what the weights are and the remedy, for the error (`CHECKPOINT_MISMATCH`).

    Raises:
        ValueError: shapes other than `duration.*` builds (`predictor_mismatch`).
    """
    try:
        predictor.load_state_dict(state)
    except RuntimeError:
        raise ValueError(predictor_mismatch(duration, *names)) from None


def load_start(init: str, encoder: TextEncoder, device: torch.device) -> DurationPredictor:
    """The predictor of `duration.init` (`init`), frozen, on `device`.

    Raises:
        ValueError: it cannot be read, or was trained on another tokenizer or vocab than `encoder`'s (one line).
    """
    try:
        loaded = load_duration(init, tokenizer=encoder.tokenizer, vocab=encoder.vocab)
    except DurationFileError as err:
        raise ValueError(f"duration.init: {err}") from None
    return loaded.predictor.to(device).eval().requires_grad_(False)


def load_duration_cases(data: DataConfig, ev: TrainEvalConfig) -> list[DurationCase]:
    """The held-out rows the predictor is measured on: `eval.prompts`, else the validation data's `testset.txt`.

    Returns:
        The rows with ground truth (empty when there is no test set, or none of its rows has one).

    Raises:
        ValueError: the test set or its audio cannot be read.
    """
    path: str | Path | None = ev.prompts
    val_dir = find_val_dir(data, ev)
    if path is None and val_dir is not None and (val_dir / VAL_TESTSET_NAME).is_file():
        path = val_dir / VAL_TESTSET_NAME
    if path is None:
        return []
    return duration_cases(read_testset(path), data.mel_type)


def validation_errors(
    cases: list[DurationCase], predictor: DurationPredictor, encoder: TextEncoder
) -> dict[str, float]:
    """`val/duration_error` (the predictor's median relative error) and `val/duration_error_rule` on `cases`."""
    estimator = DurationEstimator(LoadedDuration(predictor, encoder, 0))
    return {f"val/{key}": value for key, value in duration_errors(cases, estimator).items()}

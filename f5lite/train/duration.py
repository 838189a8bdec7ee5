"""Training the duration predictor: its optimizer, its update, and its part of a checkpoint.

Used by both ways of training it (`duration.train`): `alongside` the flow model, where `Trainer` calls `backward`
on every micro-batch it trains the flow model on and `step` after its own optimizer step; and `alone`
(`f5lite.train.duration_run`), on batches that carry only text, lengths and speakers.

The predictor trains in float32 outside the flow model's autocast (it is tiny, and its loss is a log of a sum over
hundreds of tokens), with its own fused AdamW. Across ranks its gradient is averaged with one all-reduce of the
flattened gradient per update (accelerate's `reduce`); a non-finite gradient skips the update on the device, like
the flow model's. Nothing is read back to the host.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from f5lite.config import TrainConfig
from f5lite.data.collate import Batch
from f5lite.data.manifest import VAL_TESTSET_NAME
from f5lite.data.testset import read_testset
from f5lite.eval.duration import DurationCase, duration_cases, duration_errors
from f5lite.infer.duration import DurationEstimator
from f5lite.models.duration import DurationPredictor, duration_loss
from f5lite.storage.duration_files import DurationFileError, LoadedDuration, load_duration
from f5lite.storage.store import DURATION_OPTIMIZER, DURATION_TENSORS, DURATION_UPDATES
from f5lite.storage.tree import flatten, unflatten
from f5lite.text import TextEncoder
from f5lite.train.schedule import lr_factor
from f5lite.train.validation import find_val_dir

MAX_GRAD_NORM = 1.0
"""Gradient clipping of the predictor (a fresh predictor's first gradients are large: every length is off)."""


class DurationTraining:
    """The duration predictor of a run, with its optimizer and learning-rate schedule.

    Args:
        cfg: the run's config (`duration` for the architecture and peak learning rate, `optim` for the rest).
        num_embeds: the text embedding's size (the run's vocab).
        device: where to train.
        reduce: averages a tensor across ranks (`Accelerator.reduce` with `mean`); None with one process.
    """

    def __init__(
        self, cfg: TrainConfig, num_embeds: int, device: torch.device, reduce: Callable[[Tensor], Tensor] | None
    ) -> None:
        arch, optim = cfg.duration, cfg.optim
        self.cfg = cfg
        with torch.random.fork_rng(devices=[]):  # the same initial weights on every rank and at every launch
            torch.manual_seed(cfg.seed)
            self.predictor = DurationPredictor(num_embeds, arch.dim, arch.depth, arch.kernel_size).to(device)
        self.optimizer = torch.optim.AdamW(
            self.predictor.parameters(),
            lr=torch.tensor(arch.lr, device=device),
            betas=(optim.betas[0], optim.betas[1]),
            weight_decay=optim.weight_decay,
            eps=optim.eps,
            fused=True,
        )
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
        factor = lr_factor(self.applied, self.cfg.optim.warmup_updates, self.cfg.optim.max_updates)
        for group in self.optimizer.param_groups:
            group["lr"] = (self.cfg.duration.lr * factor).to(self.applied.device)
        self.optimizer.found_inf = (~finite).float()  # type: ignore[attr-defined]
        self.optimizer.grad_scale = None  # type: ignore[attr-defined]
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.applied += finite.long()
        return finite

    def start_from(self, predictor: DurationPredictor) -> None:
        """Copy a trained predictor's weights into this one (`duration.init`; a resume then overwrites them).

        Raises:
            ValueError: its shapes are not what `duration.*` builds (one line).
        """
        self._load_weights(predictor.state_dict(), "duration.init's predictor", "give the settings it was trained with")

    def state(self) -> tuple[dict[str, dict[str, Tensor]], dict[str, Any]]:
        """The predictor's part of a checkpoint: tensor groups and metadata."""
        skeleton, tensors = flatten(self.optimizer.state_dict(), prefix=DURATION_OPTIMIZER)
        groups = {DURATION_TENSORS: self.predictor.state_dict(), DURATION_OPTIMIZER: tensors}
        return groups, {DURATION_OPTIMIZER: skeleton, DURATION_UPDATES: int(self.applied.item())}

    def load_state(self, groups: dict[str, dict[str, Tensor]], meta: dict[str, Any]) -> None:
        """Restore what `state` gave (tensors already on this rank's device).

        Raises:
            ValueError: the checkpoint's predictor has other shapes than `duration.*` builds (one line).
        """
        self._load_weights(
            groups[DURATION_TENSORS],
            "the checkpoint's duration predictor",
            "resume with the settings it was trained with",
        )
        self.optimizer.load_state_dict(unflatten(meta[DURATION_OPTIMIZER], groups[DURATION_OPTIMIZER]))
        self.applied.fill_(int(meta[DURATION_UPDATES]))

    def _load_weights(self, state: dict[str, Tensor], what: str, remedy: str) -> None:
        """Load `state` into the predictor; shapes other than `duration.*` builds are one line naming `what`."""
        try:
            self.predictor.load_state_dict(state)
        except RuntimeError:
            arch = self.cfg.duration
            raise ValueError(
                f"{what} does not fit duration.dim={arch.dim} depth={arch.depth} kernel_size={arch.kernel_size}; "
                f"{remedy}"
            ) from None


def load_start(cfg: TrainConfig, encoder: TextEncoder, device: torch.device) -> DurationPredictor:
    """The predictor of `duration.init`, frozen, on `device`.

    Raises:
        ValueError: it cannot be read, or was trained on another tokenizer or vocab than `encoder`'s (one line).
    """
    assert cfg.duration.init is not None
    try:
        loaded = load_duration(cfg.duration.init, tokenizer=encoder.tokenizer, vocab=encoder.vocab)
    except DurationFileError as err:
        raise ValueError(f"duration.init: {err}") from None
    return loaded.predictor.to(device).eval().requires_grad_(False)


def load_duration_cases(cfg: TrainConfig) -> list[DurationCase]:
    """The held-out rows the predictor is measured on: `eval.prompts`, else the validation data's `testset.txt`.

    Returns:
        The rows with ground truth (empty when there is no test set, or none of its rows has one).

    Raises:
        ValueError: the test set or its audio cannot be read.
    """
    path: str | Path | None = cfg.eval.prompts
    val_dir = find_val_dir(cfg)
    if path is None and val_dir is not None and (val_dir / VAL_TESTSET_NAME).is_file():
        path = val_dir / VAL_TESTSET_NAME
    if path is None:
        return []
    return duration_cases(read_testset(path), cfg.data.mel_type)


def validation_errors(
    cases: list[DurationCase], predictor: DurationPredictor, encoder: TextEncoder
) -> dict[str, float]:
    """`val/duration_error` (the predictor's median relative error) and `val/duration_error_rule` on `cases`."""
    estimator = DurationEstimator(LoadedDuration(predictor, encoder, 0))
    return {f"val/{key}": value for key, value in duration_errors(cases, estimator).items()}

"""Frame-budget batching: F5-TTS's `DynamicBatchSampler` semantics, reshuffled every epoch, sharded, resumable.

Like F5-TTS, a batch holds at most `max_samples` utterances and at most `frames_per_gpu` mel frames, and an
utterance longer than the whole budget is dropped (here: listed in `dropped` and logged). The budget counts the
padded batch, `batch size x longest length rounded up to pad_multiple`, which is what the model is fed; it is
never above F5-TTS's sum of lengths, so a batch that fits here fits there too.

Unlike F5-TTS, whose batches are fixed once and only reordered, batch *composition* changes every epoch: items are
sorted by length into buckets of about `bucket_batches` batches each, every epoch shuffles each bucket, packs it
greedily and shuffles the resulting batches. Everything follows from `(seed, epoch)`, so every rank computes the
same global list and takes every `num_replicas`-th batch. When the batch count does not divide among the ranks,
the fullest batches are split in two until it does, so every rank gets the same number of batches and every kept
item is still used exactly once per epoch. `state_dict` / `load_state_dict` resume mid-epoch at a batch offset.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from torch.utils.data import Sampler

logger = logging.getLogger(__name__)

_LISTED_DROPS = 10  # items named in the drop warning; `dropped` has them all


class FrameBudgetSampler(Sampler[list[int]]):
    """Yields the batches (lists of dataset indices) of one rank for the current epoch.

    Call `set_epoch(epoch)` before each epoch, as with torch's `DistributedSampler`: without it every pass
    repeats the same epoch's batches.

    Args:
        frames: Mel frame count of every dataset item (`ManifestDataset.frames`).
        frames_per_gpu: Frame budget of one batch (padded size, see the module docstring).
        max_samples: Most items in one batch.
        seed: Seed of the shuffling; the same on every rank.
        num_replicas: Number of ranks sharing the data.
        rank: This rank, in `[0, num_replicas)`.
        pad_multiple: Padded lengths are rounded up to a multiple of this (the collate pads the same way).
        bucket_batches: Width of a length bucket, in batches' worth of frames: wider buckets mix lengths more
            (more padding), narrower ones vary batch composition less between epochs.

    Raises:
        ValueError: A bad argument, or fewer usable items than ranks (some rank would get no batch).
    """

    def __init__(
        self,
        frames: Sequence[int],
        frames_per_gpu: int,
        max_samples: int,
        *,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        pad_multiple: int = 1,
        bucket_batches: int = 8,
    ) -> None:
        for name, value in (
            ("frames_per_gpu", frames_per_gpu),
            ("max_samples", max_samples),
            ("num_replicas", num_replicas),
            ("pad_multiple", pad_multiple),
            ("bucket_batches", bucket_batches),
        ):
            if value < 1:
                raise ValueError(f"{name}={value} is not valid; it must be >= 1")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank={rank} is not valid; it must be in [0, {num_replicas})")
        lengths = np.asarray(frames, dtype=np.int64).reshape(-1)
        if lengths.size and lengths.min() < 1:
            raise ValueError("every item must have at least 1 frame")
        self._budget = frames_per_gpu
        self._max_samples = max_samples
        self._seed = seed
        self._num_replicas = num_replicas
        self._rank = rank
        self._pad_multiple = pad_multiple
        self._cost = -(-lengths // pad_multiple) * pad_multiple  # lengths rounded up to the multiple
        self._num_items = int(lengths.size)

        fits = self._cost <= frames_per_gpu
        self.dropped: tuple[int, ...] = tuple(int(i) for i in np.flatnonzero(~fits))
        """Indices of the items longer than the whole budget; they are in no batch."""
        if self.dropped:
            listed = ", ".join(f"#{i} ({int(lengths[i])} frames)" for i in self.dropped[:_LISTED_DROPS])
            logger.warning(
                "%d of %d items are longer than the frame budget of %d frames and are never used: %s%s",
                len(self.dropped),
                self._num_items,
                frames_per_gpu,
                listed,
                ", ..." if len(self.dropped) > _LISTED_DROPS else "",
            )
        kept = np.flatnonzero(fits)
        if kept.size < num_replicas:
            raise ValueError(
                f"only {kept.size} item(s) fit the frame budget of {frames_per_gpu} frames; {num_replicas} ranks "
                "need at least one each"
            )
        by_length = kept[np.argsort(self._cost[kept], kind="stable")]
        # Bucket k holds the items whose cumulative frame count (in length order) starts in
        # [k * width, (k + 1) * width): similar lengths, enough of them to fill about `bucket_batches` batches.
        starts = np.cumsum(self._cost[by_length]) - self._cost[by_length]
        bucket_ids = starts // (bucket_batches * frames_per_gpu)
        cuts = np.flatnonzero(np.diff(bucket_ids)) + 1
        self._buckets = np.split(by_length, cuts)
        self._epoch = 0
        self._offset = 0
        self._cached: tuple[int, list[list[int]]] | None = None

    @property
    def epoch(self) -> int:
        """The epoch whose batches are yielded."""
        return self._epoch

    @property
    def num_kept(self) -> int:
        """Number of items that fit the budget (each is used once per epoch, across all ranks)."""
        return self._num_items - len(self.dropped)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch to iterate; a different epoch than the current one starts at its first batch.

        Args:
            epoch: The epoch number.

        Raises:
            ValueError: A negative epoch.
        """
        if epoch < 0:
            raise ValueError(f"epoch={epoch} is not valid; it must be >= 0")
        if epoch != self._epoch:
            self._epoch = epoch
            self._offset = 0

    def seek(self, offset: int) -> None:
        """Make the next iteration start at batch `offset` of the current epoch (this rank's batches).

        A DataLoader's workers draw batches from the sampler ahead of training; a new iteration after training
        stopped early (a second `fit` in the same process) must continue where training was, not where they were.

        Args:
            offset: Batches of the current epoch already consumed.

        Raises:
            ValueError: `offset` is negative or past the end of the epoch.
        """
        self.load_state_dict(self.state_dict(consumed=offset))

    def global_batches(self, epoch: int) -> list[list[int]]:
        """All ranks' batches of `epoch`, in order; batch `i` belongs to rank `i % num_replicas`.

        Args:
            epoch: The epoch number.

        Returns:
            The batches; their count is a multiple of `num_replicas`.
        """
        rng = np.random.default_rng([self._seed % 2**63, epoch])
        batches: list[list[int]] = []
        for bucket in self._buckets:
            batches.extend(self._pack(rng.permutation(bucket)))
        batches = [batches[i] for i in rng.permutation(len(batches))]
        return self._divide_evenly(batches)

    def __iter__(self) -> Iterator[list[int]]:
        """Yield this rank's remaining batches of the current epoch, then rewind to the epoch's start."""
        batches = self._rank_batches()
        while self._offset < len(batches):
            batch = batches[self._offset]
            self._offset += 1
            yield list(batch)
        self._offset = 0

    def __len__(self) -> int:
        """Number of batches the next iteration yields (this rank, current epoch, after the resume offset)."""
        return len(self._rank_batches()) - self._offset

    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """The position to resume from, plus the settings that must match on resume.

        Args:
            consumed: Batches of the current epoch that training has finished. A DataLoader with workers draws
                batches from the sampler ahead of training, so pass the count the training loop has seen; the
                default is the count this sampler has yielded, right when it is iterated directly.

        Returns:
            A plain dict (`epoch`, `offset`, and the settings) to save in a checkpoint.

        Raises:
            ValueError: `consumed` is negative or more than the epoch's batches.
        """
        offset = self._offset if consumed is None else consumed
        if not 0 <= offset <= len(self._rank_batches()):
            raise ValueError(f"consumed={offset} is not valid for an epoch of {len(self._rank_batches())} batches")
        return {"epoch": self._epoch, "offset": offset, **self._settings()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at `state["epoch"]`, batch `state["offset"]` of this rank.

        Args:
            state: A dict from `state_dict`.

        Raises:
            ValueError: The state was saved with other settings (seed, ranks, budget, data size), so resuming would
                not continue the same sequence of batches; or its offset is past the end of its epoch.
        """
        changed = [f"{k}: saved {state.get(k)!r}, now {v!r}" for k, v in self._settings().items() if state.get(k) != v]
        if changed:
            raise ValueError(f"cannot resume the batch sampler: its settings changed ({'; '.join(changed)})")
        self._epoch = int(state["epoch"])
        self._offset = int(state["offset"])
        if not 0 <= self._offset <= len(self._rank_batches()):
            raise ValueError(f"offset {self._offset} is past the end of epoch {self._epoch}")

    def _settings(self) -> dict[str, Any]:
        return {
            "seed": self._seed,
            "num_replicas": self._num_replicas,
            "frames_per_gpu": self._budget,
            "max_samples": self._max_samples,
            "pad_multiple": self._pad_multiple,
            "num_items": self._num_items,
        }

    def _rank_batches(self) -> list[list[int]]:
        if self._cached is None or self._cached[0] != self._epoch:
            batches = self.global_batches(self._epoch)[self._rank :: self._num_replicas]
            self._cached = (self._epoch, batches)
        return self._cached[1]

    def _pack(self, order: np.ndarray) -> list[list[int]]:
        """Greedily cut `order` into batches that keep to the item cap and the padded frame budget."""
        batches: list[list[int]] = []
        batch: list[int] = []
        longest = 0
        for index in order.tolist():
            cost = int(self._cost[index])
            if batch and (len(batch) >= self._max_samples or (len(batch) + 1) * max(longest, cost) > self._budget):
                batches.append(batch)
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, cost)
        if batch:
            batches.append(batch)
        return batches

    def _divide_evenly(self, batches: list[list[int]]) -> list[list[int]]:
        """Split the fullest batches in two until every rank gets the same number of batches."""
        while len(batches) % self._num_replicas:
            fullest = max(range(len(batches)), key=lambda i: len(batches[i]))
            batch = batches[fullest]
            half = len(batch) // 2
            if half == 0:  # every batch holds one item (max_samples=1, or items over half the budget)
                extra = len(batches) % self._num_replicas
                logger.warning("%d single-item batch(es) left out of this epoch so that ranks get equal counts", extra)
                return batches[: len(batches) - extra]
            batches[fullest : fullest + 1] = [batch[:half], batch[half:]]
        return batches

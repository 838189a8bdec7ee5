"""Frame-budget batches with Lhotse's dynamic bucketing, resumable exactly, on the same or another number of ranks.

Each epoch, Lhotse's `DynamicBucketingSampler` reads the epoch's cuts lazily (a bounded buffer, never the whole
set), sorts them into length buckets and cuts batches of at most `data.max_samples` utterances and
`data.frames_per_gpu` mel frames (the sum of the utterances' frames, as F5-TTS counts; within a bucket padding adds
little). `data.quadratic_duration` makes long utterances cost more, so batches of long clips stay within memory.
Utterances longer than the whole budget are left out and counted. With several ranks, every rank runs the same
sampler and takes its own batch of each round of `world_size` batches (all drawn from one bucket, so ranks wait for
each other little); the rounds of an epoch are the same on every rank.

The position is counted in rounds of the current epoch. A resume on the same number of ranks replays that many
rounds without loading any audio (exactly where training was). A resume on another number of ranks cannot continue
the same stream, whose rounds depend on the number of ranks: it replays the earlier part of the epoch under the old
number, collects the ids of every utterance those rounds held, and continues the epoch under the new number without
them. Nothing is seen twice and nothing is skipped; the epoch's earlier parts are kept in the state (`segments`), so
several changes within one epoch work too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from lhotse import CutSet
from lhotse.cut import Cut
from lhotse.dataset import DynamicBucketingSampler
from torch.utils.data import Sampler

from f5lite.audio import HOP_LENGTH, SAMPLE_RATE
from f5lite.data.cuts import frames_of

logger = logging.getLogger(__name__)

_LISTED_DROPS = 5  # utterances named in the warnings about the frame budget


class _RoundRecorder(DynamicBucketingSampler):
    """A Lhotse sampler that also records the ids of every batch of every rank it draws (for elastic replay)."""

    seen: set[str]

    def _next_batch(self) -> CutSet:
        batch = super()._next_batch()
        self.seen.update(cut.id for cut in batch)
        return batch


class CutBatchSampler(Sampler[CutSet]):
    """Yields this rank's batches (`CutSet`s) of the current epoch.

    Call `set_epoch(epoch)` before each epoch, as with torch's `DistributedSampler`.

    Args:
        epoch_cuts: the lazy cuts of an epoch (a function of the epoch: mixing and shard order change with it).
        frames_per_gpu: frame budget of one batch.
        max_samples: most utterances in one batch.
        num_buckets: length buckets.
        quadratic_duration: Lhotse's quadratic cost in seconds (None: the budget is linear in length).
        pad_multiple: lengths are padded up to a multiple of this (the budget check rounds the same way).
        seed: shuffling seed, the same on every rank.
        num_replicas: ranks sharing the data.
        rank: this rank.
        fingerprint: identity of the data, checked on resume.

    Raises:
        ValueError: a bad argument.
    """

    def __init__(
        self,
        epoch_cuts: Callable[[int], CutSet],
        *,
        frames_per_gpu: int,
        max_samples: int,
        num_buckets: int = 20,
        quadratic_duration: float | None = None,
        pad_multiple: int = 1,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        fingerprint: str = "",
    ) -> None:
        for name, value in (
            ("frames_per_gpu", frames_per_gpu),
            ("max_samples", max_samples),
            ("num_buckets", num_buckets),
            ("num_replicas", num_replicas),
            ("pad_multiple", pad_multiple),
        ):
            if value < 1:
                raise ValueError(f"{name}={value} is not valid; it must be >= 1")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank={rank} is not valid; it must be in [0, {num_replicas})")
        self._epoch_cuts = epoch_cuts
        self._budget = frames_per_gpu
        self._max_samples = max_samples
        self._num_buckets = num_buckets
        self._quadratic = quadratic_duration
        self._pad_multiple = pad_multiple
        self._seed = seed
        self._world_size = num_replicas
        self._rank = rank
        self._fingerprint = fingerprint
        self._epoch = 0
        self._segments: list[list[int]] = []  # earlier [world_size, rounds] parts of the current epoch
        self._start = 0  # rounds of the current part to skip at the next iteration
        self._yielded = 0
        self._dropped: set[str] = set()

    @property
    def dropped(self) -> int:
        """Distinct utterances left out because they are longer than the frame budget (so far, this process)."""
        return len(self._dropped)

    @property
    def epoch(self) -> int:
        """The epoch whose batches are yielded."""
        return self._epoch

    @property
    def position(self) -> int:
        """Rounds of the current epoch (under this number of ranks) that a resume has already accounted for."""
        return self._start

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch to iterate; a different epoch than the current one starts at its first batch.

        Raises:
            ValueError: a negative epoch.
        """
        if epoch < 0:
            raise ValueError(f"epoch={epoch} is not valid; it must be >= 0")
        if epoch != self._epoch:
            self._epoch = epoch
            self._segments = []
            self._start = 0

    def seek(self, rounds: int) -> None:
        """Make the next iteration start after `rounds` rounds of the current part of the epoch.

        A DataLoader's workers draw batches from the sampler ahead of training; a new iteration after training
        stopped early (a second `fit` in the same process) must continue where training was.
        """
        if rounds < 0:
            raise ValueError(f"rounds={rounds} is not valid; it must be >= 0")
        self._start = rounds

    def __iter__(self) -> Iterator[CutSet]:
        """Yield this rank's remaining batches of the current epoch."""
        excluded = self._replay_earlier_parts()
        # A Lhotse sampler is its own iterator, and iterating it again would start the epoch over: only `next`.
        batches = iter(self._lhotse(self._world_size, self._rank, excluded))
        for _ in range(self._start):
            if next(batches, None) is None:
                return
        self._yielded = self._start
        while (batch := next(batches, None)) is not None:
            self._yielded += 1
            yield batch

    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """The position to resume from, plus the settings that must match on resume.

        Args:
            consumed: rounds of the current part of the epoch that training has finished. A DataLoader with workers
                draws batches ahead of training, so pass the count the training loop has seen; the default is how
                far this sampler has yielded.

        Returns:
            A JSON-serializable dict for the checkpoint.
        """
        rounds = self._yielded if consumed is None else consumed
        return {
            "epoch": self._epoch,
            "world_size": self._world_size,
            "rounds": rounds,
            "segments": [list(s) for s in self._segments],
            **self._settings(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at the saved position, on this or another number of ranks.

        Raises:
            ValueError: the state was saved with other data or batching settings, so the batches of the epoch would
                not be the same.
        """
        changed = [f"{k}: saved {state.get(k)!r}, now {v!r}" for k, v in self._settings().items() if state.get(k) != v]
        if changed:
            raise ValueError(f"cannot resume the batch sampler: its settings changed ({'; '.join(changed)})")
        self._epoch = int(state["epoch"])
        self._segments = [list(s) for s in state.get("segments", [])]
        if int(state["world_size"]) == self._world_size:
            self._start = int(state["rounds"])
        else:
            self._segments.append([int(state["world_size"]), int(state["rounds"])])
            self._start = 0
            logger.info(
                "resuming epoch %d on %d ranks after %d rounds on %d: the utterances already used are left out",
                self._epoch,
                self._world_size,
                int(state["rounds"]),
                int(state["world_size"]),
            )

    def _settings(self) -> dict[str, Any]:
        return {
            "seed": self._seed,
            "frames_per_gpu": self._budget,
            "max_samples": self._max_samples,
            "num_buckets": self._num_buckets,
            "quadratic_duration": self._quadratic,
            "pad_multiple": self._pad_multiple,
            "data": self._fingerprint,
        }

    def _replay_earlier_parts(self) -> set[str]:
        """Ids of the utterances the epoch's earlier parts (under other numbers of ranks) used."""
        excluded: set[str] = set()
        for world_size, rounds in self._segments:
            recorder = self._lhotse(world_size, 0, excluded, recorder=True)
            assert isinstance(recorder, _RoundRecorder)
            recorder.seen = set()
            batches = iter(recorder)
            for _ in range(rounds):
                if next(batches, None) is None:
                    break
            excluded |= recorder.seen
        return excluded

    def _lhotse(
        self, world_size: int, rank: int, excluded: set[str], recorder: bool = False
    ) -> DynamicBucketingSampler:
        cuts = self._epoch_cuts(self._epoch).filter(self._fits)
        if excluded:
            cuts = cuts.filter(lambda cut: cut.id not in excluded)
        kind = _RoundRecorder if recorder else DynamicBucketingSampler
        # Lhotse's budget is a sum of durations in seconds: `frames_per_gpu` hops of audio (an utterance's frame
        # count is its duration in hops plus one, so a batch may hold up to `max_samples` frames more).
        max_duration = self._budget * HOP_LENGTH / SAMPLE_RATE
        # Lhotse estimates bucket edges from the first cuts and needs at least one cut per bucket (and two
        # buckets): a small data set gets fewer buckets, one of a single cut gets one explicit edge.
        available = sum(1 for _ in islice(cuts, self._num_buckets))
        buckets: dict[str, Any] = {"num_buckets": min(self._num_buckets, available)}
        if available < 2:
            buckets = {"duration_bins": [max_duration]}
        sampler = kind(
            cuts,
            max_duration=max_duration,
            max_cuts=self._max_samples,
            **buckets,
            shuffle=True,
            drop_last=False,
            quadratic_duration=self._quadratic,
            world_size=world_size,
            rank=rank,
            seed=self._seed,
        )
        sampler.set_epoch(self._epoch)
        return sampler

    def _fits(self, cut: Cut) -> bool:
        frames = frames_of(cut)
        padded = -(-frames // self._pad_multiple) * self._pad_multiple
        if padded <= self._budget:
            return True
        if cut.id not in self._dropped:  # the stream is read more than once (bucket edges, replays)
            self._dropped.add(cut.id)
            if self.dropped <= _LISTED_DROPS:
                logger.warning(
                    "utterance %s (%d frames) is longer than the frame budget data.frames_per_gpu=%d and is not used%s",
                    cut.id,
                    frames,
                    self._budget,
                    "; later ones are counted only" if self.dropped == _LISTED_DROPS else "",
                )
        return False

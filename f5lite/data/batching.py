"""Frame-budget batches from a sorted window of the stream, resumable exactly, on the same or another number of ranks.

**What a batch holds.** At most `data.max_samples` utterances whose frames sum to at most `data.frames_per_gpu` (as
F5-TTS counts: the sum of the utterances' mel frames, each rounded up to `data.pad_multiple`); with
`data.quadratic_duration` an utterance of that many seconds counts double, so that batches of long clips fit memory.
An utterance longer than the whole budget is left out and counted (`dropped`); the first few are named in warnings.

**How batches are made.** F5-TTS sorts the whole dataset by length and fills batches greedily, which wastes almost no
frames on padding but needs every length in memory at start. Lhotse's dynamic bucketing streams, but its length
buckets are wide, and each bucket ends an epoch with a part-filled batch. Here the epoch's cuts are streamed lazily
(a function of the epoch: weighted mixing and Shar shard order stay upstream) through two bounded pools:

1. a shuffle buffer of `data.window` cuts (seeded by seed and epoch), so that the windows, hence the batches, differ
   from one epoch to the next even when the data is stored in a fixed order;
2. a *window* of the next `data.window` cuts, sorted by length and packed longest first: a batch takes the longest
   utterances left while they fit, then, since the next one does not, tops up its leftover budget with the longest
   shorter utterance that fits, as long as the batch keeps a padding efficiency (real frames / batch size x its
   longest utterance) of at least `data.fill_efficiency`. Sorted packing puts the short utterances together, where
   `max_samples` binds before the budget does; topping up moves some of them into the leftover budgets of longer
   batches, so fewer batches carry the same frames (on Emilia-like lengths: more real frames per batch than F5-TTS's
   whole-set sort at the same budget, with padding efficiency above 0.99; `scripts/bench_data.py --batching`).

The window's batches, in their length order, are grouped into *rounds* of `world_size` batches (neighbours in length,
so the ranks of one round wait for each other little), and the rounds are shuffled (seeded) before they are yielded,
each batch's utterances too (the duration predictor pairs an utterance with the next of its speaker in the batch,
which in packing order would be one of about the same length).
The window's last round holds its only batch that stopped because the window ran out rather than because it was
full: it goes back into the next window and is packed again, so a window leaves no part-filled batch behind. At the
end of the epoch the last round, if it has fewer than `world_size` batches, is evened out by splitting its largest
batches (and, with fewer utterances than ranks, by repeating some, their ids marked `_dup`, as Lhotse does). At most
about twice `data.window` cuts are in memory, never the whole set.

**Ranks and resume.** Every rank runs the same stream and takes its own batch of each round; the rounds of an epoch
are the same on every rank. The position is counted in rounds of the current epoch. A resume on the same number of
ranks replays that many rounds from metadata, without loading any audio (exactly where training was). A resume on
another number of ranks cannot continue the same stream, whose rounds depend on the number of ranks: it replays the
earlier part of the epoch under the old number, collects the ids of every utterance those rounds held, and continues
the epoch under the new number without them. Nothing is seen twice and nothing is skipped; the epoch's earlier parts
are kept in the state (`segments`), so several changes within one epoch work too.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from lhotse import CutSet
from lhotse.cut import Cut
from torch.utils.data import Sampler

from f5lite.audio import HOP_LENGTH, SAMPLE_RATE
from f5lite.data.cuts import frames_of

logger = logging.getLogger(__name__)

_LISTED_DROPS = 5  # utterances named in the warnings about the frame budget
_FRAMES_PER_SECOND = SAMPLE_RATE / HOP_LENGTH

Round = list[list[Cut]]
"""One batch per rank, the batches of neighbouring lengths."""


class CutBatchSampler(Sampler[CutSet]):
    """Yields this rank's batches (`CutSet`s) of the current epoch.

    Call `set_epoch(epoch)` before each epoch, as with torch's `DistributedSampler`.

    Args:
        epoch_cuts: the lazy cuts of an epoch (a function of the epoch: mixing and shard order change with it).
        frames_per_gpu: frame budget of one batch (the sum of its utterances' frames).
        max_samples: most utterances in one batch.
        window: cuts sorted and packed together (and the size of the shuffle buffer ahead of them).
        fill_efficiency: a batch full by the budget takes a shorter utterance into its leftover budget only while
            its padding efficiency stays at least this (1: never pads for it).
        quadratic_duration: seconds at which an utterance counts double in the budget (None: linear in length).
        pad_multiple: lengths are padded up to a multiple of this (the budget counts the rounded lengths).
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
        window: int = 10000,
        fill_efficiency: float = 0.99,
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
            ("window", window),
            ("num_replicas", num_replicas),
            ("pad_multiple", pad_multiple),
        ):
            if value < 1:
                raise ValueError(f"{name}={value} is not valid; it must be >= 1")
        if not 0 < fill_efficiency <= 1:
            raise ValueError(f"fill_efficiency={fill_efficiency} is not valid; it must be in (0, 1]")
        if quadratic_duration is not None and not quadratic_duration > 0:
            raise ValueError(f"quadratic_duration={quadratic_duration} is not valid; it must be > 0")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank={rank} is not valid; it must be in [0, {num_replicas})")
        self._epoch_cuts = epoch_cuts
        self._budget = frames_per_gpu
        self._max_samples = max_samples
        self._window = window
        self._fill = fill_efficiency
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
        rounds = self._rounds(self._world_size, self._replay_earlier_parts())
        for _ in range(self._start):  # replayed from metadata: no audio is read
            if next(rounds, None) is None:
                return
        self._yielded = self._start
        for round_ in rounds:
            self._yielded += 1
            yield CutSet.from_cuts(round_[self._rank])

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
            "window": self._window,
            "fill_efficiency": self._fill,
            "quadratic_duration": self._quadratic,
            "pad_multiple": self._pad_multiple,
            "data": self._fingerprint,
        }

    def _replay_earlier_parts(self) -> set[str]:
        """Ids of the utterances the epoch's earlier parts (under other numbers of ranks) used, every rank's."""
        excluded: set[str] = set()
        for world_size, rounds in self._segments:
            used = set(excluded)
            for round_ in islice(self._rounds(world_size, excluded), rounds):
                used.update(cut.id for batch in round_ for cut in batch)
            excluded = used
        return excluded

    def _rng(self, purpose: str) -> random.Random:
        """A generator of the epoch, the same on every rank and in every replay."""
        # The seed string keeps this module's old name (`f5lite.data.sampler`): a new one would shuffle every epoch
        # differently, so a checkpoint saved before the rename would not resume exactly.
        return random.Random(f"f5lite.data.sampler {purpose} seed={self._seed} epoch={self._epoch}")

    def _rounds(self, world_size: int, excluded: set[str]) -> Iterator[Round]:
        """The epoch's rounds of `world_size` batches, leaving out the utterances in `excluded`."""
        cuts = self._epoch_cuts(self._epoch).filter(self._fits)
        if excluded:
            cuts = cuts.filter(lambda cut: cut.id not in excluded)
        stream = _shuffled(cuts, self._window, self._rng("cuts"))
        order = self._rng("rounds")
        carried: list[Cut] = []
        while True:
            fresh = list(islice(stream, self._window))
            last = len(fresh) < self._window
            if not carried and not fresh:
                return
            rounds = _grouped(self._pack(carried + fresh), world_size)
            carried = []
            if not last and (len(rounds[-1]) < world_size or len(rounds[-1][-1]) < self._max_samples):
                carried = [cut for batch in rounds.pop() for cut in batch]  # packed again with the next window
            elif last and len(rounds[-1]) < world_size:
                rounds[-1] = _evened_out(rounds[-1], world_size)
            order.shuffle(rounds)
            for round_ in rounds:
                for batch in round_:  # packed longest first; in random order, neighbours differ in length
                    order.shuffle(batch)
                yield round_
            if last:
                return

    def _pack(self, cuts: list[Cut]) -> list[list[Cut]]:
        """Batches of `cuts` under the budget, longest first (see the module docstring)."""
        frames = [frames_of(cut) for cut in cuts]
        ranked = sorted(range(len(cuts)), key=frames.__getitem__)  # stable: equal lengths keep the shuffled order
        pool = [cuts[i] for i in ranked]
        lengths = [frames[i] for i in ranked]
        costs = [self._cost(n) for n in lengths]  # ascending, as the lengths
        batches = []
        while pool:
            batch, top = [pool.pop()], lengths.pop()
            spent, real = costs.pop(), top
            while pool and len(batch) < self._max_samples and spent + costs[-1] <= self._budget:
                batch.append(pool.pop())
                real += lengths.pop()
                spent += costs.pop()
            while pool and len(batch) < self._max_samples:  # top up with the longest shorter one that fits
                i = bisect.bisect_right(costs, self._budget - spent) - 1
                while i >= 0 and spent + costs[i] > self._budget:  # float rounding of quadratic costs
                    i -= 1
                if i < 0 or real + lengths[i] < self._fill * (len(batch) + 1) * top:
                    break
                batch.append(pool.pop(i))
                real += lengths.pop(i)
                spent += costs.pop(i)
            batches.append(batch)
        return batches

    def _cost(self, frames: int) -> float:
        """What an utterance of `frames` frames takes of the budget."""
        padded = -(-frames // self._pad_multiple) * self._pad_multiple
        if self._quadratic is None:
            return padded
        return padded + padded**2 / (self._quadratic * _FRAMES_PER_SECOND)

    def _fits(self, cut: Cut) -> bool:
        frames = frames_of(cut)
        if self._cost(frames) <= self._budget:
            return True
        if cut.id not in self._dropped:  # the stream is read more than once (replays)
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


def _shuffled(cuts: Iterable[Cut], size: int, rng: random.Random) -> Iterator[Cut]:
    """`cuts` in a random order, through a buffer of `size` (each cut leaves it at a random step after entering)."""
    buffer: list[Cut] = []
    for cut in cuts:
        if len(buffer) < size:
            buffer.append(cut)
            continue
        i = rng.randrange(size)
        yield buffer[i]
        buffer[i] = cut
    rng.shuffle(buffer)
    yield from buffer


def _grouped(batches: list[list[Cut]], world_size: int) -> list[Round]:
    """Consecutive batches (of neighbouring lengths) in rounds of `world_size`; the last round may be short."""
    return [batches[i : i + world_size] for i in range(0, len(batches), world_size)]


def _evened_out(round_: Round, world_size: int) -> Round:
    """The epoch's last round with one batch per rank: the largest batches split, cuts repeated if too few."""
    batches = [list(batch) for batch in round_]
    while len(batches) < world_size:
        largest = max(range(len(batches)), key=lambda i: len(batches[i]))
        if len(batches[largest]) < 2:
            break
        batch = batches[largest]  # longest first: both halves keep neighbouring lengths
        batches[largest : largest + 1] = [batch[0::2], batch[1::2]]
    cuts = [cut for batch in batches for cut in batch]
    for k in range(world_size - len(batches)):  # fewer utterances than ranks
        cut = cuts[k % len(cuts)]
        batches.append([cut.with_id(f"{cut.id}_dup{k // len(cuts)}")])
    return batches

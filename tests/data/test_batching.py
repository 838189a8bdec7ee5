"""Frame-budget batching from sorted windows of a lazy stream: budget kept, little padding and full batches, every
utterance once per epoch, bounded reading, sharded, mixed by weight, and resumed exactly, on the same or another
number of ranks (synthetic cuts: the sampler reads metadata only)."""

from __future__ import annotations

import logging
from collections import Counter
from itertools import chain
from pathlib import Path

import numpy as np
import pytest
from lhotse import CutSet

from f5lite.config import DataConfig, SourceConfig
from f5lite.data import CutBatchSampler, build_train_data, make_cut, write_cuts
from f5lite.data.cuts import frames_of

BUDGET = 6000
MAX_SAMPLES = 16
WINDOW = 128  # several windows in the 600 cuts, so that what crosses from one window to the next is exercised


def synthetic(path: Path, n: int, seed: int = 0, prefix: str = "u") -> Path:
    """`n` cuts of 0.5 to 15 s (no audio: the sampler never loads it), two of them longer than the budget."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    seconds = rng.uniform(0.5, 15.0, size=n)
    seconds[7], seconds[11] = 70.0, 200.0
    cuts = []
    for i, s in enumerate(seconds):
        samples = int(s * 24000)
        cuts.append(make_cut(f"{prefix}{i:05d}", f"/nowhere/{i}.wav", sample_rate=24000, num_samples=samples,
                             channels=1, text="x", frames=1 + samples // 256))  # fmt: skip
    write_cuts(path, cuts)
    return path


@pytest.fixture(scope="module")
def cuts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic(tmp_path_factory.mktemp("cuts") / "cuts.jsonl.gz", 600)


def sampler(path: Path, **kwargs) -> CutBatchSampler:
    settings = {"frames_per_gpu": BUDGET, "max_samples": MAX_SAMPLES, "window": WINDOW, "seed": 3}
    settings |= {"fingerprint": "data", **kwargs}
    return CutBatchSampler(lambda epoch: CutSet.from_jsonl_lazy(path), **settings)


def epoch(s: CutBatchSampler, number: int) -> list[list[str]]:
    s.set_epoch(number)
    return [[c.id for c in batch] for batch in s]


def frames(path: Path) -> dict[str, int]:
    return {c.id: frames_of(c) for c in CutSet.from_jsonl_lazy(path)}


@pytest.mark.parametrize("pad_multiple", [1, 64])
def test_no_batch_exceeds_the_budget_and_every_utterance_appears_once(cuts_file, pad_multiple, caplog) -> None:
    lengths = frames(cuts_file)
    s = sampler(cuts_file, pad_multiple=pad_multiple)
    kept = sorted(k for k in lengths if k not in ("u00007", "u00011"))
    with caplog.at_level(logging.WARNING, logger="f5lite.data.batching"):
        for number in range(2):
            batches = epoch(s, number)
            for batch in batches:
                assert 1 <= len(batch) <= MAX_SAMPLES
                assert sum(-(-lengths[c] // pad_multiple) * pad_multiple for c in batch) <= BUDGET  # F5-TTS's sum
            assert sorted(chain.from_iterable(batches)) == kept
    assert s.dropped == 2  # the two over-budget utterances
    assert "u00007 (6563 frames) is longer than the frame budget" in caplog.text


def test_batches_are_deterministic_in_seed_and_epoch_and_change_between_epochs(cuts_file) -> None:
    a, b = sampler(cuts_file), sampler(cuts_file)
    first, second = epoch(a, 0), epoch(a, 1)
    assert epoch(b, 1) == second and epoch(b, 0) == first
    assert first != second
    assert epoch(sampler(cuts_file, seed=4), 0) != first


def test_batches_group_similar_lengths(cuts_file) -> None:
    lengths = frames(cuts_file)
    spread = [max(lengths[c] for c in b) - min(lengths[c] for c in b) for b in epoch(sampler(cuts_file), 0)]
    assert np.median(spread) < 0.25 * (max(lengths.values()) - min(lengths.values()))


def lognormal_cuts(n: int, seed: int = 0) -> list:
    """Emilia-like lengths: log-normal around 8 s (sigma 0.5), clipped to 3..30 s; metadata only."""
    seconds = np.clip(np.random.default_rng(seed).lognormal(np.log(8.0), 0.5, size=n), 3.0, 30.0)
    return [
        make_cut(f"e{i:05d}", f"/nowhere/{i}.wav", sample_rate=24000, num_samples=int(s * 24000), channels=1,
                 text="x", frames=1 + int(s * 24000) // 256)
        for i, s in enumerate(seconds)
    ]  # fmt: skip


def sorted_greedy_batches(lengths: list[int], budget: int, max_samples: int) -> list[list[int]]:
    """F5-TTS's `DynamicBatchSampler`: the whole set sorted by length, batches filled while the sum fits."""
    batches: list[list[int]] = [[]]
    for n in sorted(lengths):
        if sum(batches[-1]) + n > budget or len(batches[-1]) == max_samples:
            batches.append([])
        batches[-1].append(n)
    return batches


def padding_efficiency(batches: list[list[int]]) -> float:
    return sum(map(sum, batches)) / sum(len(b) * max(b) for b in batches)


def test_little_padding_and_fuller_batches_than_a_sort_of_the_whole_set() -> None:
    """Windows of half the set, sorted and packed, against F5-TTS's sort of the whole set at the same budget: at
    least 0.99 of the frames real, and at least as many real frames per batch (fewer batches for the same cuts)."""
    cuts = lognormal_cuts(4000)
    lengths = {c.id: frames_of(c) for c in cuts}
    budget, max_samples = 9600, 16  # a quarter of F5-TTS's 38400 frames and 64 utterances
    s = CutBatchSampler(lambda e: CutSet.from_cuts(cuts), frames_per_gpu=budget, max_samples=max_samples, window=2000)
    ours = [[lengths[c] for c in batch] for batch in epoch(s, 0)]
    reference = sorted_greedy_batches(list(lengths.values()), budget, max_samples)
    assert sorted(chain.from_iterable(ours)) == sorted(lengths.values())
    assert all(sum(b) <= budget and len(b) <= max_samples for b in ours)
    assert padding_efficiency(ours) >= 0.99, padding_efficiency(ours)
    assert len(ours) <= len(reference), (len(ours), len(reference))  # the same frames in no more batches
    # Topping up the leftover budgets is what makes the batches fuller: without it, more batches.
    plain = CutBatchSampler(lambda e: CutSet.from_cuts(cuts), frames_per_gpu=budget, max_samples=max_samples,
                            window=2000, fill_efficiency=1.0)  # fmt: skip
    assert len(epoch(plain, 0)) > len(ours)


def test_a_window_leaves_no_part_filled_batch_behind(cuts_file) -> None:
    """Only the epoch's last batch may stop because the cuts ran out; each window's goes into the next window."""
    lengths = frames(cuts_file)
    batches = epoch(sampler(cuts_file, window=64, fill_efficiency=1.0), 0)  # about ten windows
    part_filled = [
        b for b in batches if len(b) < MAX_SAMPLES and sum(lengths[c] for c in b) + min(lengths[c] for c in b) <= BUDGET
    ]
    assert len(part_filled) <= 1, [[lengths[c] for c in b] for b in part_filled]


def test_batches_come_in_no_length_order(cuts_file) -> None:
    """A window's batches are packed longest first and then shuffled: the next batch is as often longer as not."""
    lengths = frames(cuts_file)
    longest = [max(lengths[c] for c in b) for b in epoch(sampler(cuts_file), 0)]
    shorter = np.mean([b < a for a, b in zip(longest, longest[1:], strict=False)])
    assert 0.3 < shorter < 0.7, shorter


def test_a_batch_s_utterances_come_in_no_length_order(cuts_file) -> None:
    """Packed longest first, then shuffled: the duration predictor pairs each utterance with the next of its speaker
    in the batch, and in packing order that one would have about the same length."""
    lengths = frames(cuts_file)
    batches = epoch(sampler(cuts_file), 0)
    steps = [lengths[b] < lengths[a] for batch in batches for a, b in zip(batch, batch[1:], strict=False)]
    assert 0.3 < np.mean(steps) < 0.7, np.mean(steps)


def test_the_batches_of_a_round_have_neighbouring_lengths(cuts_file) -> None:
    """Each rank's batch of a round comes from the same stretch of sorted lengths, so the ranks wait little."""
    lengths = frames(cuts_file)
    per_rank = [epoch(sampler(cuts_file, num_replicas=2, rank=r), 0) for r in range(2)]
    gaps = [abs(max(lengths[c] for c in a) - max(lengths[c] for c in b)) for a, b in zip(*per_rank, strict=True)]
    assert np.median(gaps) < 0.05 * (max(lengths.values()) - min(lengths.values())), np.median(gaps)


def test_the_stream_is_read_lazily_through_bounded_pools(cuts_file) -> None:
    """Before its first batch the sampler has read a shuffle buffer and a window, not the whole set."""
    read = []

    def counted(cut):
        read.append(cut.id)
        return cut

    s = CutBatchSampler(lambda e: CutSet.from_jsonl_lazy(cuts_file).map(counted), frames_per_gpu=BUDGET,
                        max_samples=MAX_SAMPLES, window=50)  # fmt: skip
    s.set_epoch(0)
    batches = iter(s)
    next(batches)
    assert len(set(read) - {"u00007", "u00011"}) <= 2 * 50  # the two over-budget cuts are read and left out
    rest = list(batches)
    assert len(read) == 600 and len(rest) > 10


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_get_disjoint_batches_of_equal_count(cuts_file, ranks) -> None:
    per_rank = [epoch(sampler(cuts_file, num_replicas=ranks, rank=r), 0) for r in range(ranks)]
    assert len({len(batches) for batches in per_rank}) == 1
    seen = [c for batches in per_rank for batch in batches for c in batch]
    # The epoch's last round is evened out by splitting batches, and by repeating an utterance (marked `_dup`) when
    # fewer are left than ranks.
    originals = [c for c in seen if "_dup" not in c]
    assert len(originals) == len(set(originals)) == 598  # every kept utterance once, in one rank
    assert all(c.split("_dup")[0] in originals for c in seen)


def test_a_resume_on_the_same_ranks_continues_exactly(cuts_file) -> None:
    full = epoch(sampler(cuts_file), 2)
    resumed = sampler(cuts_file)
    resumed.load_state_dict(sampler(cuts_file).state_dict() | {"epoch": 2, "rounds": 9})
    assert resumed.epoch == 2 and resumed.position == 9
    assert [[c.id for c in b] for b in resumed] == full[9:]


@pytest.mark.parametrize(("before", "after"), [(2, 1), (1, 2), (2, 3)])
def test_a_resume_on_another_number_of_ranks_sees_each_utterance_once(cuts_file, before, after, caplog) -> None:
    """Part of the epoch on `before` ranks, the rest on `after`: no utterance twice, none left out."""
    rounds = 5
    consumed = []
    for rank in range(before):
        s = sampler(cuts_file, num_replicas=before, rank=rank)
        s.set_epoch(1)
        batches = iter(s)
        consumed += [c.id for _ in range(rounds) for c in next(batches)]
    state = s.state_dict(consumed=rounds)
    rest = []
    with caplog.at_level(logging.INFO, logger="f5lite.data.batching"):
        for rank in range(after):
            s = sampler(cuts_file, num_replicas=after, rank=rank)
            s.load_state_dict(state)
            rest += [c.id for batch in s for c in batch]
    assert f"resuming epoch 1 on {after} ranks after {rounds} rounds on {before}" in caplog.text
    everything = consumed + rest
    assert len(everything) == len(set(everything)) == 598
    # A second resume within the same epoch replays both earlier parts.
    s = sampler(cuts_file, num_replicas=after, rank=0)
    s.load_state_dict(state)
    later = s.state_dict(consumed=1)
    assert later["segments"] == [[before, rounds]] and later["rounds"] == 1


def test_a_resume_with_other_settings_is_refused(cuts_file) -> None:
    state = sampler(cuts_file).state_dict(consumed=3)
    for changed in (
        {"frames_per_gpu": 5000},
        {"max_samples": 8},
        {"fingerprint": "other data"},
        {"seed": 9},
        {"window": 64},
        {"fill_efficiency": 0.95},
    ):
        with pytest.raises(ValueError, match="cannot resume the batch sampler: its settings changed"):
            sampler(cuts_file, **changed).load_state_dict(state)


def test_a_quadratic_cost_makes_batches_of_long_utterances_smaller(cuts_file) -> None:
    lengths = frames(cuts_file)

    def mean_size_of_long_batches(s: CutBatchSampler) -> float:
        long = [b for b in epoch(s, 0) if min(lengths[c] for c in b) > 1000]
        return float(np.mean([len(b) for b in long]))

    assert mean_size_of_long_batches(sampler(cuts_file, quadratic_duration=5.0)) < mean_size_of_long_batches(
        sampler(cuts_file)
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frames_per_gpu": 0}, "frames_per_gpu=0"),
        ({"num_replicas": 2, "rank": 2}, "rank=2"),
        ({"window": 0}, "window=0"),
        ({"fill_efficiency": 0.0}, "fill_efficiency=0.0"),
        ({"fill_efficiency": 1.5}, "fill_efficiency=1.5"),
    ],
)
def test_bad_arguments_are_refused(cuts_file, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        sampler(cuts_file, **kwargs)


def test_mixed_sources_keep_their_weights_in_the_batches(tmp_path) -> None:
    new = synthetic(tmp_path / "new" / "cuts.jsonl.gz", 14000, seed=1, prefix="new")
    base = synthetic(tmp_path / "base" / "cuts.jsonl.gz", 4000, seed=2, prefix="base")
    cfg = DataConfig(
        sources=[SourceConfig(dir=str(new), weight=0.8), SourceConfig(dir=str(base), weight=0.2)],
        tokenizer="byte",
        frames_per_gpu=4000,
        max_samples=8,
    )
    data = build_train_data(cfg, seed=0)
    data.sampler.set_epoch(0)
    counts: Counter[str] = Counter()
    batches = 0
    for batch in data.sampler:
        counts.update("new" if c.id.startswith("new") else "base" for c in batch)
        batches += 1
        if batches == 2000:
            break
    assert batches == 2000
    share = counts["new"] / (counts["new"] + counts["base"])
    assert abs(share - 0.8) < 0.03, share

"""Frame-budget batching: budget kept, every item once per epoch, reshuffled per epoch, sharded, resumable."""

from __future__ import annotations

import logging
from itertools import chain

import numpy as np
import pytest

from f5lite.data import FrameBudgetSampler

BUDGET = 6000
MAX_SAMPLES = 16


def _lengths(n: int = 600, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(40, 1500, size=n).tolist()
    lengths[7] = BUDGET + 1  # longer than the whole budget
    lengths[11] = 3 * BUDGET
    return lengths


def _padded(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


def _epoch(sampler: FrameBudgetSampler, epoch: int) -> list[list[int]]:
    sampler.set_epoch(epoch)
    return list(sampler)


@pytest.mark.parametrize("pad_multiple", [1, 64])
def test_no_batch_exceeds_the_budget_and_every_item_appears_once(pad_multiple, caplog):
    lengths = _lengths()
    with caplog.at_level(logging.WARNING, logger="f5lite.data.sampler"):
        sampler = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=3, pad_multiple=pad_multiple)
    assert sampler.dropped == (7, 11)
    assert "2 of 600 items are longer than the frame budget" in caplog.text
    kept = sorted(set(range(len(lengths))) - {7, 11})
    for epoch in range(3):
        batches = _epoch(sampler, epoch)
        assert len(batches) == len(sampler) or epoch > 0
        for batch in batches:
            longest = max(_padded(lengths[i], pad_multiple) for i in batch)
            assert 1 <= len(batch) <= MAX_SAMPLES
            assert len(batch) * longest <= BUDGET  # the padded batch, so also F5-TTS's sum of lengths
            assert sum(lengths[i] for i in batch) <= BUDGET
        assert sorted(chain.from_iterable(batches)) == kept


def test_batches_are_reshuffled_every_epoch_but_deterministic_in_seed_and_epoch():
    lengths = _lengths()
    a = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=5)
    b = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=5)
    epoch0, epoch1 = _epoch(a, 0), _epoch(a, 1)
    assert _epoch(b, 1) == epoch1 and _epoch(b, 0) == epoch0
    compositions = [{frozenset(batch) for batch in batches} for batches in (epoch0, epoch1)]
    assert len(compositions[0] & compositions[1]) < len(compositions[0]) // 4  # F5-TTS would keep them all
    assert _epoch(FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=6), 0) != epoch0
    assert list(a) == epoch1  # without set_epoch the same epoch repeats


def test_batches_group_similar_lengths():
    lengths = _lengths()
    batches = _epoch(FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=1), 0)
    real = sum(lengths[i] for i in chain.from_iterable(batches))
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    assert real / padded > 0.85  # random batches of these lengths waste about half


@pytest.mark.parametrize("num_replicas", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_ranks_get_disjoint_batches_of_equal_count(num_replicas, seed):
    lengths = _lengths(n=203, seed=seed)
    samplers = [
        FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=seed, num_replicas=num_replicas, rank=r)
        for r in range(num_replicas)
    ]
    for epoch in range(4):
        per_rank = [_epoch(s, epoch) for s in samplers]
        assert len({len(batches) for batches in per_rank}) == 1
        assert all(len(s) == len(per_rank[0]) for s in samplers)
        items = [i for batches in per_rank for batch in batches for i in batch]
        assert len(items) == len(set(items))  # disjoint
        assert sorted(items) == sorted(set(range(len(lengths))) - {7, 11})  # and still complete


def test_resuming_from_epoch_and_offset_yields_the_same_remaining_batches():
    lengths = _lengths()
    kwargs = {"seed": 9, "num_replicas": 2, "rank": 1, "pad_multiple": 8}
    running = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, **kwargs)
    running.set_epoch(2)
    iterator = iter(running)
    seen = [next(iterator) for _ in range(5)]
    state = running.state_dict()
    assert (state["epoch"], state["offset"]) == (2, 5)
    remaining = list(iterator)

    resumed = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, **kwargs)
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # a trainer that sets the epoch again after loading keeps the offset
    assert len(resumed) == len(remaining)
    assert list(resumed) == remaining
    assert seen + remaining == _epoch(FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, **kwargs), 2)
    assert _epoch(resumed, 3) == _epoch(running, 3)  # later epochs start from their first batch

    # A loader draws ahead of training: the loop says how many batches it really consumed.
    assert running.state_dict(consumed=3)["offset"] == 3


def test_resuming_with_other_settings_is_refused():
    lengths = _lengths()
    state = FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=1).state_dict()
    with pytest.raises(ValueError, match="num_replicas: saved 1, now 2"):
        FrameBudgetSampler(lengths, BUDGET, MAX_SAMPLES, seed=1, num_replicas=2).load_state_dict(state)
    with pytest.raises(ValueError, match="num_items"):
        FrameBudgetSampler(lengths[:-1], BUDGET, MAX_SAMPLES, seed=1).load_state_dict(state)


def test_single_item_batches_are_evened_out_across_ranks(caplog):
    lengths = [10] * 7
    samplers = [FrameBudgetSampler(lengths, 100, 1, num_replicas=2, rank=r) for r in range(2)]
    with caplog.at_level(logging.WARNING, logger="f5lite.data.sampler"):
        counts = [len(list(s)) for s in samplers]
    assert counts == [3, 3]
    assert "left out of this epoch" in caplog.text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frames_per_gpu": 0}, "frames_per_gpu"),
        ({"max_samples": 0}, "max_samples"),
        ({"num_replicas": 2, "rank": 2}, "rank"),
        ({"pad_multiple": 0}, "pad_multiple"),
        ({"frames": [5, 0]}, "at least 1 frame"),
        ({"frames": [5000, 10], "frames_per_gpu": 100, "num_replicas": 2}, "only 1 item"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    args = {"frames": [10, 20, 30], "frames_per_gpu": 100, "max_samples": 4, **kwargs}
    frames = args.pop("frames")
    with pytest.raises(ValueError, match=message):
        FrameBudgetSampler(frames, args.pop("frames_per_gpu"), args.pop("max_samples"), **args)

"""Frame-budget batching on Lhotse: budget kept, every utterance once per epoch, sharded, mixed by weight, and resumed
exactly, on the same or another number of ranks (synthetic cuts: the sampler reads metadata only)."""

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
    settings = {"frames_per_gpu": BUDGET, "max_samples": MAX_SAMPLES, "seed": 3, "fingerprint": "data", **kwargs}
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
    with caplog.at_level(logging.WARNING, logger="f5lite.data.sampler"):
        for number in range(2):
            batches = epoch(s, number)
            for batch in batches:
                assert 1 <= len(batch) <= MAX_SAMPLES
                # Lhotse budgets durations: at most one frame per utterance beyond the budget (F5-TTS's sum).
                assert sum(lengths[c] for c in batch) <= BUDGET + len(batch)
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


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_get_disjoint_batches_of_equal_count(cuts_file, ranks) -> None:
    per_rank = [epoch(sampler(cuts_file, num_replicas=ranks, rank=r), 0) for r in range(ranks)]
    assert len({len(batches) for batches in per_rank}) == 1
    seen = [c for batches in per_rank for batch in batches for c in batch]
    # Lhotse evens out the last round by repeating an utterance (marked `_dup`) when too few are left.
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
    with caplog.at_level(logging.INFO, logger="f5lite.data.sampler"):
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
    for changed in ({"frames_per_gpu": 5000}, {"max_samples": 8}, {"fingerprint": "other data"}, {"seed": 9}):
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
    [({"frames_per_gpu": 0}, "frames_per_gpu=0"), ({"num_replicas": 2, "rank": 2}, "rank=2")],
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

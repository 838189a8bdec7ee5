"""Exact resume: a run stopped and relaunched continues exactly as an uninterrupted run would have.

The runs read an 18-utterance slice of the demo data (5 batches an epoch) with 2 loader workers, which fetch batches
ahead of the loop, accumulate 2 micro-batches per update (so an update can straddle two epochs) and pass the EMA's
copy phase, so that a lost sampler position, EMA step or optimizer state changes the numbers. The comparisons are
bit for bit by design: both runs are on one machine with one kernel set, so nothing may round differently (see
`trainer_helpers.assert_same_tensors`); a tolerance would hide a lost state whose effect is small.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.trainer_helpers import (
    Record,
    assert_same_tensors,
    checkpoint_meta,
    demo_slice,
    final_state,
    make,
    recording,
)

UPDATES = 7  # 14 batches: epoch 0 (5), epoch 1 (5), 4 of epoch 2


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_slice(tmp_path_factory.mktemp("slice"), 18)


def settings(data: Path) -> tuple[str, ...]:
    return (
        f"data.dir={data}", "data.max_samples=4", "data.num_workers=2", "optim.grad_accum=2",
        "model.dropout=0.1",
        f"optim.max_updates={UPDATES}", "logger.every=1",
    )  # fmt: skip


def test_resume_with_workers_across_epochs_is_exact(tmp_path: Path, small_data: Path) -> None:
    extra = settings(small_data)
    straight, staged = Record(), Record()
    first = make(tmp_path, *extra, name="straight")
    assert sum(1 for _ in first.data.sampler) == 5  # the epoch boundaries fall where the docstring says
    recording(first, straight).fit()
    # Stop after update 3, which took the last batch of epoch 0 and the first of epoch 1 (the workers are ahead by
    # then); relaunch; go on in the same process to update 5 (mid-epoch 1); relaunch again and finish.
    trainer = recording(make(tmp_path, *extra, name="staged"), staged)
    trainer.fit(until=3)
    trainer = recording(make(tmp_path, *extra, name="staged"), staged)
    assert trainer.update == 3
    trainer.fit(until=4)
    trainer.fit(until=5)
    trainer = recording(make(tmp_path, *extra, name="staged"), staged)
    assert trainer.update == 5
    trainer.fit()
    assert len(straight.losses) == UPDATES
    assert staged.paths == straight.paths  # the same batches, in the same order
    assert staged.losses == straight.losses  # bit for bit
    assert staged.lrs == straight.lrs
    a, b = final_state(tmp_path / "straight", UPDATES), final_state(tmp_path / "staged", UPDATES)
    for group in ("model", "ema", "optimizer"):
        assert_same_tensors(a[group], b[group], group)
    meta_a, meta_b = checkpoint_meta(tmp_path / "straight", UPDATES), checkpoint_meta(tmp_path / "staged", UPDATES)
    for key in ("ema_step", "applied", "bad_total", "bad_streak", "sampler", "update"):
        assert meta_a[key] == meta_b[key], key
    assert meta_a["ema_step"] == UPDATES and meta_a["sampler"]["epoch"] == 2


def test_resume_restores_the_sampler_position_the_loop_reached(tmp_path: Path, small_data: Path) -> None:
    """The checkpoint holds the batches the loop consumed, not how far the workers had read ahead."""
    trainer = make(tmp_path, *settings(small_data))
    trainer.fit(until=1)
    meta = checkpoint_meta(tmp_path / "run", 1)
    assert (meta["sampler"]["epoch"], meta["sampler"]["rounds"]) == (0, 2)

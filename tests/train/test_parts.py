"""EMA, learning-rate schedule, step seeding and run-directory rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from f5lite.audio.images import mel_image
from f5lite.config import compose_config, config_to_yaml
from f5lite.storage.rundir import check_run_dir, identity_hash, write_run_files
from f5lite.train.ema import EMA, ema_decay
from f5lite.train.schedule import lr_factor
from f5lite.train.seeding import step_seed


def test_ema_copies_then_averages_with_warmup() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    ema = EMA(model, decay=0.9, update_every=1, update_after=2, device="cpu")
    for value in (1.0, 2.0, 3.0):  # steps 0, 1, 2 are within update_after: copies
        torch.nn.init.constant_(model.weight, value)
        ema.update(model)
    assert torch.equal(ema.shadow["weight"], torch.full((1, 2), 3.0))
    torch.nn.init.constant_(model.weight, 7.0)
    ema.update(model)  # step 3: k = 4 - 2 - 1 = 1, decay 1 - 2 ** (-2/3) ~ 0.37
    decay = 1 - 2 ** (-2 / 3)
    torch.testing.assert_close(ema.shadow["weight"], torch.full((1, 2), 3.0 * decay + 7.0 * (1 - decay)))
    ema.step.fill_(10_000)
    assert ema.current_decay() == 0.9
    assert [ema_decay(s, 0.9, 2).item() for s in (0, 3, 4)] == [0.0, 0.0, pytest.approx(decay)]


def test_ema_update_every_counts_calls() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    ema = EMA(model, decay=0.5, update_every=3, update_after=0, device="cpu")
    seen = []
    for value in range(7):
        torch.nn.init.constant_(model.weight, float(value))
        ema.update(model)
        seen.append(ema.shadow["weight"][0, 0].item())
    assert seen[0] == 0.0 and seen[1] == seen[2] == 0.0 and seen[3] != 0.0 and seen[4] == seen[5] == seen[3]
    assert (ema.calls, int(ema.step)) == (7, 7)


def test_ema_skips_a_skipped_update_and_lives_on_cpu() -> None:
    model = torch.nn.Linear(2, 1)
    ema = EMA(model, decay=0.5, update_every=1, update_after=0, device="cpu")
    ema.step.fill_(5)
    before = {k: v.clone() for k, v in ema.shadow.items()}
    torch.nn.init.constant_(model.weight, 100.0)
    ema.update(model, applied=torch.tensor(False))
    assert all(torch.equal(before[k], v) for k, v in ema.shadow.items())
    assert int(ema.step) == 5 and ema.calls == 1  # the decay schedule counts applied updates only
    assert all(v.device.type == "cpu" for v in ema.shadow.values())
    ema.update(model, applied=torch.tensor(True))
    assert not torch.equal(before["weight"], ema.shadow["weight"]) and int(ema.step) == 6


def test_lr_warmup_then_linear_decay() -> None:
    factors = [lr_factor(u, warmup=4, total=10).item() for u in range(10)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    short = [lr_factor(u, warmup=100, total=3).item() for u in range(3)]  # a run shorter than its warm-up
    assert short == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_step_seeds_differ_by_every_input() -> None:
    seeds = {step_seed(1, 2, 3, 4), step_seed(2, 2, 3, 4), step_seed(1, 3, 3, 4), step_seed(1, 2, 4, 4)}
    assert len(seeds | {step_seed(1, 2, 3, 5)}) == 5
    assert step_seed(1, 2, 3, 4) == step_seed(1, 2, 3, 4)


def test_run_dir_refuses_another_architecture(tmp_path: Path) -> None:
    cfg = config_to_yaml(compose_config(["+recipe=debug_tiny"]))
    assert check_run_dir(tmp_path, cfg, None) == []
    write_run_files(tmp_path, cfg, None)
    lr = config_to_yaml(compose_config(["+recipe=debug_tiny", "optim.lr=0.01"]))
    assert check_run_dir(tmp_path, lr, None) == ["optim.lr"] and identity_hash(lr) == identity_hash(cfg)
    other = config_to_yaml(compose_config(["+recipe=debug_tiny", "model.depth=3"]))
    assert identity_hash(other) != identity_hash(cfg)
    with pytest.raises(ValueError, match="holds a run with other model.depth"):
        check_run_dir(tmp_path, other, None)


def test_mel_image() -> None:
    mel = torch.arange(12.0).reshape(3, 4)  # [frames, mels]
    image = mel_image(mel)
    assert image.shape == (4, 3) and image.dtype.name == "uint8"
    assert image[-1, 0] == 0 and image[0, -1] == 255  # low mels at the bottom

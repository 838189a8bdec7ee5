"""`f5lite.storage.model_sources`: what is at a path, loaded the same way (and refused with the same words) everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.trainer_helpers import assert_same_tensors, make

from f5lite.config import compose_config
from f5lite.infer import load_model
from f5lite.storage import SourceKind, identify, load_source, read_weights
from f5lite.train import Trainer
from f5lite.train.export import export_run

ASSETS = Path(__file__).parents[1] / "assets" / "f5tts_compat"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A debug_tiny run of 4 updates (past the EMA's copy phase) with its end-of-training export."""
    root = tmp_path_factory.mktemp("sources")
    make(root, "optim.max_updates=4", "ckpt.every=2", "ckpt.keep_last=0").fit()
    return root / "run"


def test_each_kind_is_identified(run: Path) -> None:
    assert identify(run) is SourceKind.RUN
    assert identify(run / "export") is SourceKind.EXPORT
    assert identify(ASSETS / "dit_tiny.safetensors") is SourceKind.OFFICIAL


def test_a_run_and_its_export_load_the_same_ema_weights(run: Path) -> None:
    from_run, exported = load_source(run), load_source(run / "export")
    assert (from_run.step, exported.step) == (4, None)
    assert_same_tensors(from_run.backbone.state_dict(), exported.backbone.state_dict(), "weights")
    assert (from_run.tokenizer, from_run.mel_type, from_run.model) == (
        exported.tokenizer,
        exported.mel_type,
        exported.model,
    )
    earlier = load_source(run, step=2)
    assert earlier.step == 2
    assert not torch.equal(earlier.backbone.proj_out.weight, from_run.backbone.proj_out.weight)
    weights = read_weights(run)  # a run can start another run (init.weights): its EMA and its vocab
    assert_same_tensors(weights.state, from_run.backbone.state_dict(), "read_weights")
    assert weights.vocab is not None and weights.vocab.tokens == from_run.vocab.tokens  # type: ignore[union-attr]


def test_an_official_file_needs_its_recipe_and_vocab() -> None:
    path = ASSETS / "dit_tiny.safetensors"
    with pytest.raises(ValueError, match="holds only weights: give the recipe"):
        load_source(path)
    assert read_weights(path).kind is SourceKind.OFFICIAL  # starting a run from it needs no recipe


@pytest.mark.parametrize(
    ("make_path", "message"),
    [
        (lambda tmp: tmp / "nowhere", r"model .*nowhere does not exist"),
        (lambda tmp: tmp, r"is a directory but neither an f5lite export directory \(no config\.json\)"),
        (lambda tmp: (tmp / "notes.txt").write_text("x") and tmp / "notes.txt", "neither an f5lite export"),
    ],
)
def test_every_reader_refuses_a_bad_path_with_the_same_line(tmp_path: Path, make_path, message: str) -> None:
    """f5lite-infer, init.weights and f5lite-export all say the same thing about a path that holds no model."""
    bad = make_path(tmp_path)
    with pytest.raises(ValueError, match=message) as by_infer:
        load_model(bad)
    reasons = [str(by_infer.value)]
    with pytest.raises(ValueError, match=message) as by_init:
        Trainer(compose_config(["+recipe=debug_tiny", f"run_dir={tmp_path / 'run'}", f"init.weights={bad}"]))
    reasons.append(str(by_init.value).removeprefix("init.weights: "))
    if bad.is_dir() or not bad.exists():  # f5lite-export takes run directories only
        with pytest.raises(ValueError, match=message) as by_export:
            export_run(bad, tmp_path / "out")
        reasons.append(str(by_export.value))
    assert len(set(reasons)) == 1 and "\n" not in reasons[0], reasons


def test_options_that_do_not_apply_are_refused(run: Path) -> None:
    with pytest.raises(ValueError, match="is a training run directory, which has its own architecture and vocab"):
        load_source(run, recipe="debug_tiny")
    with pytest.raises(ValueError, match="is an f5lite export: a step is chosen only among a training run"):
        load_source(run / "export", step=2)
    with pytest.raises(ValueError, match=r"no checkpoint of update 3 .*have: 2, 4"):
        load_source(run, step=3)
    with pytest.raises(ValueError, match="is an f5lite export, not a training run directory"):
        export_run(run / "export", run.parent / "again")

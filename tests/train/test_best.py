"""Checkpoint selection: keep_best across a resume, f5lite-export --best, early stopping, the settings' checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.trainer_helpers import checkpoint_meta, make

import f5lite.train.evaluation as evaluation_module
from f5lite.config import compose_config
from f5lite.config.ckpt import PROMPT_PREFIX
from f5lite.metrics.items import METRIC_KEYS
from f5lite.storage.store import CheckpointStore
from f5lite.train.best import BestTracker, lower_is_better
from f5lite.train.export import main as export_main

BEST = ["eval.every=4", "ckpt.every=4", "ckpt.keep_last=1", "ckpt.keep_best=2", "optim.max_updates=24"]


def scripted(monkeypatch: pytest.MonkeyPatch, values: dict[int, float]) -> None:
    """Make every validation report `values[update]` as val/loss (the real evaluation still runs)."""
    real = evaluation_module.Evaluator.run

    def run(self, update, *args, **kwargs):  # type: ignore[no-untyped-def]
        results = real(self, update, *args, **kwargs)
        if "val/loss" in results:
            results["val/loss"] = values[update]
        return results

    monkeypatch.setattr(evaluation_module.Evaluator, "run", run)


def kept_steps(run: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("step-")) for p in (run / "checkpoints").glob("step-*"))


def test_keep_best_keeps_the_lowest_validation_losses_across_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lowest at 8 and 16: before the resume (at 12) and after it; the newest (24) stays as the last one.
    values = {4: 5.0, 8: 1.0, 12: 4.0, 16: 2.0, 20: 3.0, 24: 6.0}
    scripted(monkeypatch, values)
    make(tmp_path, *BEST).fit(until=12)
    assert kept_steps(tmp_path / "run") == [8, 12]  # 8 best so far (and 4 next best), 12 the last
    assert checkpoint_meta(tmp_path / "run", 8)["score"] == {
        "metric": "val/loss",
        "value": 1.0,
        "lower_is_better": True,
    }
    make(tmp_path, *BEST).fit()
    assert kept_steps(tmp_path / "run") == [8, 16, 24]
    assert checkpoint_meta(tmp_path / "run", 24)["best"] == {
        "metric": "val/loss",
        "value": 1.0,
        "update": 8,
        "stale": 4,
    }


def test_export_best_exports_the_best_checkpoints_ema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, {4: 3.0, 8: 1.0, 12: 2.0})
    make(tmp_path, *BEST, "optim.max_updates=12").fit()
    run = tmp_path / "run"
    assert export_main([str(run), "--out", str(tmp_path / "best"), "--best"]) == 0
    ema = load_file(run / "checkpoints" / "step-00000008" / "ema.safetensors")
    exported = load_file(tmp_path / "best" / "model.safetensors")
    assert all(torch.equal(exported[f"transformer.{k}"], v) for k, v in ema.items())
    newest = load_file(run / "checkpoints" / "step-00000012" / "ema.safetensors")
    assert not all(torch.equal(exported[f"transformer.{k}"], v) for k, v in newest.items())
    assert export_main([str(run), "--out", str(tmp_path / "x"), "--best", "--step", "8"]) == 2


def test_export_best_without_scores_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(tmp_path, "optim.max_updates=2").fit()
    capsys.readouterr()
    assert export_main([str(tmp_path / "run"), "--out", str(tmp_path / "e"), "--best"]) == 2
    err = capsys.readouterr().err
    assert "has a score of val/loss" in err and err.count("\n") == 1


def test_patience_stops_early_saves_exports_and_stays_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, {4: 3.0, 8: 2.0, 12: 2.5, 16: 2.0, 20: 9.0, 24: 9.0})
    args = ["eval.every=4", "ckpt.every=100", "eval.patience=2", "optim.max_updates=24"]
    trainer = make(tmp_path, *args)
    trainer.fit()
    run = tmp_path / "run"
    assert trainer.update == 16 and trainer.finished  # 12 and 16 brought no new best (16 only ties)
    meta = checkpoint_meta(run, 16)
    assert meta["finished"] is True and meta["best"]["update"] == 8
    assert (run / "export" / "model.safetensors").is_file()
    again = make(tmp_path, *args)
    again.fit()
    assert again.update == 16 and kept_steps(run) == [16]


def test_an_unimproved_resumed_count_continues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, {4: 1.0, 8: 2.0, 12: 2.0, 16: 2.0})
    args = ["eval.every=4", "ckpt.every=4", "eval.patience=3", "optim.max_updates=24"]
    make(tmp_path, *args).fit(until=8)
    trainer = make(tmp_path, *args)
    trainer.fit()
    assert trainer.update == 16  # stale 1 at the resume, 3 at update 16


def test_best_tracker_directions_and_nan() -> None:
    assert lower_is_better("val/loss") and lower_is_better("prompts/wer") and lower_is_better("prompts/mcd")
    assert not lower_is_better("prompts/sim") and not lower_is_better("prompts/mos_sig")
    for keys in METRIC_KEYS.values():
        assert all(isinstance(lower_is_better(PROMPT_PREFIX + key), bool) for key in keys)
    compose_config(["+recipe=debug_tiny", "eval.sample_every=4", "eval.patience=1", "ckpt.best_metric=prompts/mos_bak"])
    sim = BestTracker("prompts/sim", patience=1)
    assert sim.observe(0.5, 1) and sim.observe(0.6, 2) and not sim.observe(0.55, 3) and sim.should_stop()
    loss = BestTracker("val/loss")
    assert not loss.observe(float("nan"), 1) and loss.value is None and loss.observe(3.0, 2)
    assert not loss.should_stop()  # no patience: never


def test_store_ranks_scored_checkpoints(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep_last=1, keep_best=1, best_metric="prompts/sim")
    t = {"model": {"w": torch.zeros(1)}}
    for step, value in [(1, 0.2), (2, 0.9), (3, float("nan")), (4, 0.5)]:
        store.save(step, t, {"score": {"metric": "prompts/sim", "value": value, "lower_is_better": False}})
    store.save(5, t, {"score": {"metric": "val/loss", "value": 0.0, "lower_is_better": True}})
    store.close()
    assert kept_steps_in(tmp_path) == [2, 5]  # the highest sim, and the newest
    assert store.best_step("prompts/sim") == 2
    with pytest.raises(ValueError, match="no checkpoint .* has a score of val/loss_online"):
        store.best_step("val/loss_online")


def kept_steps_in(root: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("step-")) for p in root.glob("step-*"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["ckpt.keep_best=2", "eval.every=0"], "ckpt.best_metric=val/loss is never measured: eval.every=0"),
        (["ckpt.keep_best=2", "eval.every=3", "ckpt.every=10"], "needs eval.every=3 to divide ckpt.every=10"),
        (["ckpt.keep_best=1", "ckpt.best_metric=prompts/wer"], "never measured: eval.sample_every=0"),
        (["eval.patience=2", "ckpt.best_metric=val/loss_online"], "needs eval.online=true"),
        (["ckpt.best_metric=accuracy"], "ckpt.best_metric='accuracy' is not valid"),
        (
            ["eval.patience=2", "eval.sample_every=4", "ckpt.best_metric=prompts/mcd", "eval.metrics=[wer,sim]"],
            r"prompts/mcd is not given by eval.metrics=\['wer', 'sim'\] .* it gives: prompts/sim, prompts/wer$",
        ),
        (
            ["eval.patience=2", "eval.sample_every=4", "ckpt.best_metric=prompts/wer", "eval.language=zh"],
            "prompts/wer is not given by .* eval.language=zh",
        ),
        (["eval.patience=2", "eval.sample_every=4", "ckpt.best_metric=prompts/bleu"], "prompts/bleu is not given"),
        (["eval.metrics=[wer,bleu]"], "eval.metrics"),
        (["eval.language=fr"], "eval.language"),
    ],
)
def test_bad_selection_settings_name_the_key(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        compose_config(["+recipe=debug_tiny", *overrides])
    assert "\n" not in str(err.value)


def test_selection_without_validation_data_stops_before_training(tmp_path: Path) -> None:
    other = tmp_path / "data"
    other.mkdir()
    (other / "cuts.jsonl.gz").write_bytes((Path(__file__).parents[2] / "f5lite/demo_data/cuts.jsonl.gz").read_bytes())
    with pytest.raises(ValueError, match="ckpt.best_metric=val/loss needs validation data"):
        make(tmp_path, "eval.every=4", "ckpt.every=4", "ckpt.keep_best=1", f"data.dir={other}", "data.tokenizer=byte")
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_eval_log_lines_are_json(tmp_path: Path) -> None:
    make(tmp_path, "eval.every=2", "optim.max_updates=2").fit()
    rows = [json.loads(line) for line in (tmp_path / "run" / "logs" / "eval.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [2]

"""The validation loss: fixed per-utterance draws, independent of batching and order, per time bin, in training."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make

from f5lite.config import compose_config
from f5lite.data.collate import Utterance
from f5lite.models import build_backbone_from_config
from f5lite.models.cfm import flow_errors, flow_loss
from f5lite.paths import demo_dir
from f5lite.storage.rundir import load_run_config
from f5lite.text import TextEncoder, load_vocab
from f5lite.train.validation import ValidationSet, bin_names, load_validation_set

VAL = demo_dir() / "val"


@pytest.fixture(scope="module")
def encoder() -> TextEncoder:
    return TextEncoder("char", load_vocab(demo_dir() / "vocab.txt"))


@pytest.fixture(scope="module")
def backbone(encoder: TextEncoder) -> torch.nn.Module:
    cfg = compose_config(["+recipe=debug_tiny"])
    torch.manual_seed(0)
    return build_backbone_from_config(cfg.model, encoder.num_embeds).eval()


def load(encoder: TextEncoder, **kw: int) -> ValidationSet:
    args = {"seed": 0, "max_utterances": 256, "time_bins": 4, "frames_per_batch": 4000, "max_samples": 8} | kw
    return load_validation_set(VAL, encoder, mel_type="vocos", **args)


def test_two_evaluations_of_the_same_weights_are_identical(encoder: TextEncoder, backbone: torch.nn.Module) -> None:
    first = load(encoder).evaluate(backbone, torch.device("cpu"))
    again = load(encoder).evaluate(backbone, torch.device("cpu"))  # loaded anew: the draws come from the seed
    assert first == again
    assert set(first) == {"loss", *bin_names(4)} and all(math.isfinite(v) for v in first.values())


def test_the_loss_does_not_depend_on_batching_or_order(encoder: TextEncoder, backbone: torch.nn.Module) -> None:
    one_by_one = load(encoder, max_samples=1).evaluate(backbone, torch.device("cpu"))
    batched = load(encoder).evaluate(backbone, torch.device("cpu"))
    assert len(load(encoder, max_samples=1).batches) == 12 and len(load(encoder).batches) == 2
    for key in batched:
        assert one_by_one[key] == pytest.approx(batched[key], rel=1e-5)
    val = load(encoder)
    mels = [b.mel[i, : b.lens[i]] for b in val.batches for i in range(b.mel.shape[0])]
    utterances = [(f"u{k}", Utterance(mel, [1, 2, 3], "x", 0)) for k, mel in enumerate(mels)]
    forward = ValidationSet(utterances, seed=3, time_bins=2, frames_per_batch=4000, max_samples=8)
    backward = ValidationSet(utterances[::-1], seed=3, time_bins=2, frames_per_batch=4000, max_samples=8)
    assert forward.evaluate(backbone, torch.device("cpu")) == backward.evaluate(backbone, torch.device("cpu"))


def test_another_seed_draws_otherwise(encoder: TextEncoder, backbone: torch.nn.Module) -> None:
    assert load(encoder, seed=1).evaluate(backbone, torch.device("cpu")) != load(encoder).evaluate(
        backbone, torch.device("cpu")
    )


def test_times_are_stratified_and_every_bin_is_filled(encoder: TextEncoder) -> None:
    val = load(encoder, time_bins=4)
    times = torch.cat([b.time for b in val.batches]).sort().values
    bins = torch.cat([b.bins for b in val.batches])
    assert torch.bincount(bins, minlength=4).tolist() == [3, 3, 3, 3]  # 12 utterances, 4 bins
    assert all(i / 12 <= float(t) < (i + 1) / 12 for i, t in enumerate(times))  # one per stratum
    assert all(
        float(t) * 4 // 1 == int(b) for batch in val.batches for t, b in zip(batch.time, batch.bins, strict=True)
    )
    empty = load(encoder, time_bins=16).evaluate(
        build_backbone_from_config(compose_config(["+recipe=debug_tiny"]).model, encoder.num_embeds).eval(),
        torch.device("cpu"),
    )
    assert sum(math.isnan(v) for v in empty.values()) >= 4  # 12 utterances cannot fill 16 bins


def test_each_utterance_keeps_its_draws_in_any_subset(encoder: TextEncoder) -> None:
    whole, part = load(encoder), load(encoder, max_utterances=5)
    assert sum(b.mel.shape[0] for b in part.batches) == 5

    def spans(val: ValidationSet) -> dict[float, tuple[int, float]]:
        return {  # keyed by the utterance's mel
            float(b.mel[i].sum()): (int(b.span[i].sum()), float(b.x0[i, 0, 0]))
            for b in val.batches
            for i in range(b.mel.shape[0])
        }

    kept = spans(part)
    assert kept.items() <= spans(whole).items()  # the same span and noise for the same utterance


def test_per_sample_errors_add_up_to_the_training_loss(backbone: torch.nn.Module, encoder: TextEncoder) -> None:
    batch = load(encoder).batches[0]
    args = (backbone, batch.mel, batch.text, batch.lens)
    draws = {"x0": batch.x0, "time": batch.time, "span_mask": batch.span}
    with torch.no_grad():
        sums, counts = flow_errors(*args, **draws)
        loss = flow_loss(*args, **draws, drop_audio_cond=False, drop_text=False)
    assert sums.shape == counts.shape == (batch.mel.shape[0],)
    assert torch.equal(counts, batch.span.sum(1).float() * 100)
    assert float(sums.sum() / counts.sum()) == pytest.approx(float(loss), rel=1e-6)


def test_an_unreadable_validation_utterance_is_named(tmp_path: Path, encoder: TextEncoder) -> None:
    import gzip

    lines = gzip.decompress((VAL / "cuts.jsonl.gz").read_bytes()).decode().splitlines()
    broken = json.loads(lines[0])
    broken["recording"]["sources"][0]["source"] = str(tmp_path / "gone.ogg")
    (tmp_path / "cuts.jsonl.gz").write_bytes(gzip.compress((json.dumps(broken) + "\n").encode()))
    with pytest.raises(ValueError, match=rf"validation utterance {broken['id']} .* cannot be read") as err:
        load_validation_set(
            tmp_path, encoder, mel_type="vocos", seed=0, max_utterances=4, time_bins=2, frames_per_batch=99,
            max_samples=2,
        )  # fmt: skip
    assert "\n" not in str(err.value)


@pytest.mark.heavy
def test_training_reports_the_validation_loss_below_the_untrained_models(tmp_path: Path) -> None:
    trainer = make(tmp_path, "optim.max_updates=24", "eval.every=12", "eval.online=true", "optim.lr=3e-3")
    assert trainer.evaluator is not None and trainer.evaluator.validation is not None
    untrained = trainer.evaluator.validation.evaluate(
        build_backbone_from_config(load_run_config(trainer.run_dir).model, trainer.data.encoder.num_embeds).eval(),
        torch.device("cpu"),
    )
    trainer.fit()
    rows = [json.loads(line) for line in (tmp_path / "run" / "logs" / "eval.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [12, 24]
    assert {"val/loss", "val/loss_online", "eval/val_seconds", *(f"val/{n}" for n in bin_names(4))} <= set(rows[0])
    assert rows[-1]["val/loss"] < 0.8 * untrained["loss"]
    assert rows[-1]["val/loss_online"] != rows[-1]["val/loss"]  # the online weights are not the EMA
    # The logged number is the EMA weights' loss, and evaluating the checkpoint again in another trainer (a new
    # set of draws from the same seed) gives exactly it.
    # The evaluation backbone lets its weights go after an evaluation (it holds no copy): assign them again.
    trainer.evaluator.backbone.load_state_dict(trainer.net.online_weights(), assign=True)
    assert (
        trainer.evaluator.validation.evaluate(trainer.evaluator.backbone, torch.device("cpu"))["loss"]
        == rows[-1]["val/loss_online"]
    )
    resumed = make(tmp_path, "optim.max_updates=24", "eval.every=12", "eval.online=true", "optim.lr=3e-3")
    assert resumed.update == 24 and resumed.evaluator is not None and resumed.evaluator.validation is not None
    resumed.evaluator.backbone.load_state_dict(resumed.net.ema_weights(), assign=True)
    again = resumed.evaluator.validation.evaluate(resumed.evaluator.backbone, torch.device("cpu"))
    assert {f"val/{k}": v for k, v in again.items()}.items() <= rows[-1].items()


def test_validation_data_is_found_beside_the_training_data_or_given(tmp_path: Path) -> None:
    trainer = make(tmp_path, "eval.every=5", name="default")
    assert trainer.evaluator is not None and trainer.evaluator.validation is not None
    assert trainer.evaluator.validation.size == 12
    with pytest.raises(ValueError, match=r"eval.val_dir=.*nowhere does not exist"):
        make(tmp_path, "eval.every=5", f"eval.val_dir={tmp_path / 'nowhere'}", name="missing")
    given = make(tmp_path, "eval.every=5", f"eval.val_dir={VAL / 'cuts.jsonl.gz'}", "eval.max_utterances=4", name="g")
    assert given.evaluator is not None and given.evaluator.validation is not None
    assert given.evaluator.validation.size == 4

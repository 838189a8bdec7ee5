"""scripts/compare_f5tts_sampling.py without F5-TTS: f5lite's configurations in their own processes on a tiny model,
the result files, the inputs of a padded batch, and the arithmetic of the ratios and targets."""

from __future__ import annotations

import argparse
import importlib.util
import json
from types import ModuleType

import pytest
import torch
from support.scripts import load_script


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    return load_script("compare_f5tts_sampling")


def test_worker_runs_in_its_own_process(compare, tmp_path) -> None:
    args = argparse.Namespace(reps=2, threads=1, seconds=0.3, ref_seconds=0.2, tiny=True)
    run = compare.runner.run_child(compare.child(compare.Config("f5lite", "fp32", True), 2, args, tmp_path / "out.pt"))
    record = run.result
    assert record is not None, run.failure
    assert len(record["times"]) == 2 and record["peak_rss_gb"] > 0
    assert torch.load(tmp_path / "out.pt", weights_only=True).shape[0] == 2


@pytest.mark.slow
def test_f5lite_side_end_to_end(compare, tmp_path, capsys) -> None:
    argv = ["--f5lite-only", "--tiny", "--rounds", "2", "--batches", "1,3", "--threads", "1"]
    argv += ["--seconds", "0.3", "--ref-seconds", "0.2", "--out-dir", str(tmp_path)]
    assert compare.main(argv) == 0
    result = json.loads((tmp_path / "f5tts_sampling_cpu.json").read_text())
    assert result["versions"]["f5-tts"] is None and result["versions"]["torch"] == torch.__version__
    assert result["machine"]["logical_cores"] >= 1 and result["date"]
    names = [c.name for c in compare.configurations(f5tts=False)]
    for batch in ("1", "3"):
        data = result["batches"][batch]
        assert list(data["median_s"]) == names
        # One timed call per process and round: two rounds, two times, each from its own process.
        assert all(len(ts) == 2 and min(ts) > 0 for ts in data["runs_s"].values())
        assert data["targets"] == {} and data["ratio_to_base"] == {}
        assert all(rss > 0 for rss in data["peak_rss_gb"].values())
    table = (tmp_path / "f5tts_sampling_cpu.md").read_text()
    assert "## Batch 1" in table and "## Batch 3" in table and "f5lite 7 EPSS + CFG-Zero*, bf16" in table
    assert "round 2 batch 3" in capsys.readouterr().out


def test_worker_precision_and_output(compare, tmp_path) -> None:
    shape = compare.Shape(2, 0.2, 0.3, tiny=True)
    save = tmp_path / "out.pt"
    record = compare.run_worker(compare.Config("f5lite", "bf16", True), shape, 2, 1, save)
    assert len(record["times"]) == 2
    out = torch.load(save, weights_only=True)
    cond, _, totals = shape.inputs()
    assert out.dtype == torch.float32 and out.shape == (2, int(totals.max()), 100)
    # The reference region is the reference, whatever the precision of the backbone.
    assert torch.equal(out[:, : cond.shape[1]], cond)


def test_padded_batch_inputs(compare) -> None:
    cond, text, totals = compare.Shape(8, 2.0, 5.0).inputs()
    n_ref = cond.shape[1]
    gens = totals - n_ref
    assert cond.shape == (8, n_ref, 100) and int(gens[0]) == round(5 * compare.FRAMES_PER_SECOND)
    assert torch.all(gens[1:] < gens[:-1]) and int(gens[-1]) > int(gens[0]) // 2
    lengths = (text != -1).sum(dim=1)
    assert torch.all(lengths[1:] <= lengths[:-1]) and int(lengths[0]) == text.shape[1]
    # Same inputs in every process: they are drawn from a private seeded generator.
    assert torch.equal(compare.Shape(8, 2.0, 5.0).inputs()[1], text)


def test_ratios_and_targets(compare) -> None:
    medians = {
        "F5-TTS 7 EPSS, fp32": 4.0,
        "F5-TTS 7 EPSS, bf16": 2.0,
        "f5lite 7 EPSS, fp32": 4.0,
        "f5lite 7 EPSS + CFG-Zero*, fp32": 2.8,
        "f5lite 7 EPSS, bf16": 2.0,
        "f5lite 7 EPSS + CFG-Zero*, bf16": 1.6,
    }
    args = argparse.Namespace(threads=2, rounds=1, reps=1, ref_seconds=2.0, seconds=5.0, tiny=False)
    times = {1: {name: [seconds] for name, seconds in medians.items()}}
    result = compare.summarize(times, {1: {}}, {1: {}}, {1: {}}, args, "1.1.22")
    ratios = result["batches"]["1"]["ratio_to_base"]
    assert ratios["f5lite 7 EPSS + CFG-Zero*, fp32"] == 0.7 and ratios["f5lite 7 EPSS + CFG-Zero*, bf16"] == 0.8
    assert ratios["F5-TTS 7 EPSS, bf16"] == 1.0
    targets = compare.targets(medians)
    assert targets["7 EPSS + CFG-Zero* vs F5-TTS 7 EPSS, fp32"]["met"] is True
    assert targets["7 EPSS + CFG-Zero* vs F5-TTS 7 EPSS, bf16"]["met"] is False
    best = targets["best vs best"]
    assert best["f5lite"] == "f5lite 7 EPSS + CFG-Zero*, bf16" and best["F5-TTS"] == "F5-TTS 7 EPSS, bf16"
    assert best["ratio"] == 0.8 and best["met"] is False


def test_needs_f5tts_unless_f5lite_only(compare, capsys) -> None:
    if importlib.util.find_spec("f5_tts") is not None:
        pytest.skip("F5-TTS is installed here")
    with pytest.raises(SystemExit) as exc:
        compare.main(["--rounds", "1"])
    assert exc.value.code == 2
    assert "F5-TTS is not importable" in capsys.readouterr().err.strip().splitlines()[-1]


def test_markdown_names_every_setting(compare) -> None:
    args = argparse.Namespace(threads=2, rounds=1, reps=1, ref_seconds=2.0, seconds=5.0, tiny=False)
    times = {1: {"F5-TTS 7 EPSS, fp32": [2.0], "f5lite 7 EPSS + CFG-Zero*, fp32": [1.0]}}
    rss = {1: {"F5-TTS 7 EPSS, fp32": 1.0, "f5lite 7 EPSS + CFG-Zero*, fp32": 0.8}}
    result = compare.summarize(times, {1: {}}, rss, {1: {}}, args, "1.1.22")
    table = compare.markdown(result)
    assert "| f5lite 7 EPSS + CFG-Zero*, fp32 | 1.000 | 0.50x | 0.200 | 0.00 |  | 0.80 |" in table
    assert "F5-TTS 1.1.22" in table and "target <= 0.75x: met" in table


def test_fewstep_worker_samples_a_student_in_one_pass_per_step(compare, tmp_path) -> None:
    """`--fewstep`: the student configuration wraps the DiT as a distilled student and takes 4 single passes."""
    config = next(c for c in compare.fewstep_configurations(f5tts=False) if c.student and c.precision == "fp32")
    assert config.name == "f5lite student 4 steps, fp32" and config.steps == 4
    calls: list[int] = []
    from f5lite.models.distill import StudentBackbone

    forward = StudentBackbone.forward

    def counted(self, x, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(x.shape[0])
        return forward(self, x, *args, **kwargs)

    StudentBackbone.forward = counted  # type: ignore[method-assign]
    try:
        compare.run_worker(config, compare.Shape(2, 0.2, 0.3, tiny=True), 1, 1, tmp_path / "out.pt")
    finally:
        StudentBackbone.forward = forward  # type: ignore[method-assign]
    assert calls == [2] + [2] * 4  # the warm-up's 1 step, then 4 steps, each one pass of the batch (no CFG rows)

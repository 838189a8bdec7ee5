"""scripts/compare_f5tts_sampling.py against F5-TTS, run without it (F5-TTS's own worker where it is importable):
f5lite's configurations in their own processes on a tiny model, the result files, the inputs of a padded batch, and
the arithmetic of the ratios and targets. Its `--rtf` mode: tests/bench/test_infer.py."""

from __future__ import annotations

import argparse
import importlib.util
import json
from dataclasses import asdict
from types import ModuleType

import pytest
import torch
from support.golden import assert_golden
from support.scripts import load_script


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    return load_script("compare_f5tts_sampling")


def spec(config, batch: int = 2, **extra) -> dict:
    """A worker's spec as the parent writes it (`child`), on the tiny DiT."""
    base = {"device": "cpu", "model": "tiny", "reps": 1, "threads": 1, "seconds": 0.3, "ref_seconds": 0.2}
    return {"config": asdict(config), "batch": batch, "save": None, "rtf": False, **base, **extra}


def test_worker_runs_in_its_own_process(compare, tmp_path) -> None:
    args = argparse.Namespace(device="cpu", model="tiny", reps=2, threads=1, seconds=0.3, ref_seconds=0.2, rtf=False)
    config = compare.Config("f5lite", "fp32", True)
    run = compare.runner.run_child(compare.child("zero star", config, 2, args, tmp_path / "out.pt"))
    record = run.result
    assert record is not None, run.failure
    assert len(record["times"]) == 2 and record["peak_rss_gb"] > 0 and record["backbone_calls"] == 6
    assert "vocoder_s" not in record  # the vocoder is timed under --rtf only
    assert torch.load(tmp_path / "out.pt", weights_only=True).shape[0] == 2


@pytest.mark.slow
def test_f5lite_side_end_to_end(compare, tmp_path, capsys) -> None:
    argv = ["--f5lite-only", "--model", "tiny", "--rounds", "2", "--batches", "1,3", "--threads", "1"]
    argv += ["--seconds", "0.3", "--ref-seconds", "0.2", "--out-dir", str(tmp_path)]
    assert compare.main(argv) == 0
    result = json.loads((tmp_path / "f5tts_sampling_cpu.json").read_text())
    assert result["versions"]["f5-tts"] is None and result["versions"]["torch"] == torch.__version__
    assert result["machine"]["logical_cores"] >= 1 and result["date"]
    names = [c.name for c in compare.suite_configs(None, f5tts=False)]
    for batch in ("1", "3"):
        data = result["batches"][batch]
        assert list(data["median_s"]) == names
        assert data["backbone_calls"] == {name: 6 if "CFG-Zero*" in name else 7 for name in names}
        assert all(cfg_batch == [2 * int(batch)] for cfg_batch in data["backbone_batch"].values())
        # One timed call per process and round: two rounds, two times, each from its own process.
        assert all(len(ts) == 2 and min(ts) > 0 for ts in data["runs_s"].values())
        assert data["targets"] == {} and data["ratio_to_base"] == {}
        assert all(rss > 0 for rss in data["peak_rss_gb"].values())
    table = (tmp_path / "f5tts_sampling_cpu.md").read_text()
    assert "## Batch 1" in table and "## Batch 3" in table and "f5lite 7 EPSS + CFG-Zero*, bf16" in table
    assert "round 2 batch 3" in capsys.readouterr().out


def test_worker_precision_and_output(compare, tmp_path) -> None:
    save = tmp_path / "out.pt"
    record = compare.run_worker(spec(compare.Config("f5lite", "bf16", True), reps=2, save=str(save)))
    assert len(record["times"]) == 2
    out = torch.load(save, weights_only=True)
    cond, _, totals = compare.inputs(2, 0.2, 0.3)
    assert out.dtype == torch.float32 and out.shape == (2, int(totals.max()), 100)
    # The reference region is the reference, whatever the precision of the backbone.
    assert torch.equal(out[:, : cond.shape[1]], cond)


def test_padded_batch_inputs(compare) -> None:
    cond, text, totals = compare.inputs(8, 2.0, 5.0)
    n_ref = cond.shape[1]
    gens = totals - n_ref
    assert cond.shape == (8, n_ref, 100) and int(gens[0]) == round(5 * compare.FRAMES_PER_SECOND)
    assert torch.all(gens[1:] < gens[:-1]) and int(gens[-1]) > int(gens[0]) // 2
    lengths = (text != -1).sum(dim=1)
    assert torch.all(lengths[1:] <= lengths[:-1]) and int(lengths[0]) == text.shape[1]
    # Same inputs in every process: they are drawn from a private seeded generator.
    assert torch.equal(compare.inputs(8, 2.0, 5.0)[1], text)


def summary(compare, medians: dict[str, float]) -> dict:
    """`summarize` of one round at batch 1 (5 s generated) of the default suite, with these medians."""
    record = {"first_call_s": 0.1, "backbone_calls": 7, "backbone_batch": [2], "generated_s": 5.0, "parameters": 1}
    records = {
        1: {name: [{**record, "times": [seconds], "peak_rss_gb": seconds / 2.5}] for name, seconds in medians.items()}
    }
    args = argparse.Namespace(suite=None, rtf=False, model="mid", threads=2, rounds=1, reps=1, note="")
    args.ref_seconds, args.seconds = 2.0, 5.0
    return compare.summarize(records, {1: {}}, compare.suite_configs(None), args, "1.1.22")


def test_ratios_and_targets(compare) -> None:
    medians = {
        "F5-TTS 7 EPSS, fp32": 4.0,
        "F5-TTS 7 EPSS, bf16": 2.0,
        "f5lite 7 EPSS, fp32": 4.0,
        "f5lite 7 EPSS + CFG-Zero*, fp32": 2.8,
        "f5lite 7 EPSS, bf16": 2.0,
        "f5lite 7 EPSS + CFG-Zero*, bf16": 1.6,
    }
    result = summary(compare, medians)
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
    result = summary(compare, {"F5-TTS 7 EPSS, fp32": 2.0, "f5lite 7 EPSS + CFG-Zero*, fp32": 1.0})
    table = compare.markdown(result)
    assert "| f5lite 7 EPSS + CFG-Zero*, fp32 | 1.000 | 0.50x | 0.200 | 7 x 2 | 0.10 | 0.40 |" in table
    assert "F5-TTS 1.1.22" in table and "target <= 0.75x: met" in table
    assert "vocoder" not in table and "mel diff" not in table  # columns without a value are left out


def test_fewstep_worker_samples_a_student_in_one_pass_per_step(compare, tmp_path) -> None:
    """`--fewstep`: the student configuration wraps the DiT as a distilled student and takes 4 single passes."""
    config = next(c for c in compare.suite_configs("fewstep", f5tts=False) if c.student and c.precision == "fp32")
    assert config.name == "f5lite student 4 steps, fp32" and config.steps == 4
    calls: list[int] = []
    from f5lite.models.distill import StudentBackbone

    forward = StudentBackbone.forward

    def counted(self, x, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(x.shape[0])
        return forward(self, x, *args, **kwargs)

    StudentBackbone.forward = counted  # type: ignore[method-assign]
    try:
        record = compare.run_worker(spec(config))
    finally:
        StudentBackbone.forward = forward  # type: ignore[method-assign]
    assert calls == [2] + [2] * 4  # the warm-up's 1 step, then 4 steps, each one pass of the batch (no CFG rows)
    assert (record["backbone_calls"], record["backbone_batch"]) == (4, [2])


def test_suites(compare) -> None:
    """Each suite's configurations, F5-TTS's first; without F5-TTS, f5lite's alone."""
    defaults = compare.suite_configs("defaults")
    assert [c.name for c in defaults if c.side == "F5-TTS"] == ["F5-TTS 32 steps, fp32"] == [defaults[0].name]
    assert len(defaults) == 9 and sum(c.compiled for c in defaults) == 4 and compare.REFERENCE in defaults
    fewstep = [c.name for c in compare.suite_configs("fewstep")]
    assert fewstep == ["F5-TTS 32 steps, fp32", "f5lite 32 steps, fp32"] + [
        f"f5lite student 4 steps, {p}" for p in ("fp32", "bf16")
    ]
    plain, compiled = compare.suite_configs(None), compare.suite_configs(None, compiled=True)
    assert [c.name for c in plain[:2]] == ["F5-TTS 7 EPSS, fp32", "F5-TTS 7 EPSS, bf16"] and len(plain) == 6
    assert compiled[:6] == plain and all(c.compiled and c.zero_star for c in compiled[6:]) and len(compiled) == 8
    assert compare.suite_configs("defaults", f5tts=False) == defaults[1:]


# A 7-step solve with CFG, as tests/sampling/test_sampler.py's SOLVE: each step's backbone rounding (a few epsilon of
# the range) fed through the guidance, measured at most 4 epsilon of the output's range; 64 leaves room for other
# GEMM kernels, while a wrong step, guidance or sway moves the output by 1e-2.
@pytest.mark.golden
def test_f5tts_worker_on_the_same_weights(compare, tmp_path) -> None:
    """F5-TTS's `CFM.sample` in a worker: its backbone calls, and its fp32 output equal to f5lite's."""
    if importlib.util.find_spec("f5_tts") is None:
        pytest.skip("F5-TTS is not importable here")
    outputs = {}
    for side in ("F5-TTS", "f5lite"):
        outputs[side] = tmp_path / f"{side}.pt"
        record = compare.run_worker(spec(compare.Config(side, "fp32"), save=str(outputs[side])))
        assert (record["backbone_calls"], record["backbone_batch"]) == (7, [4]), side  # CFG rows in one call
    theirs, ours = (torch.load(path, weights_only=True) for path in outputs.values())
    assert_golden(ours, theirs, range_ulps=64, what="F5-TTS's sample against f5lite's")

"""scripts/compare_f5tts_sampling.py --rtf (`make bench`'s sampling speed, no F5-TTS): f5lite's four step settings on a
tiny DiT, the backbone calls and sampler options of each, RTF with and without the vocoder, the report files, and
argument errors."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import pytest
import torch
from support.scripts import ROOT, load_script

import f5lite
from f5lite.sampling import time_grid

SCRIPT = ROOT / "scripts" / "compare_f5tts_sampling.py"
# Backbone calls of the four settings: 32 uniform, 16, 7 EPSS, 7 EPSS with one zero-init step.
EXPECTED_CALLS = {
    "f5lite 32 steps, fp32": 32,
    "f5lite 16 steps, fp32": 16,
    "f5lite 7 EPSS, fp32": 7,
    "f5lite 7 EPSS + CFG-Zero*, fp32": 6,
}


@pytest.fixture(scope="module")
def sampling() -> ModuleType:
    return load_script("compare_f5tts_sampling")


def spec(config, batch: int = 2, **extra) -> dict:
    """A worker's spec as the parent writes it (`child`), on the tiny DiT."""
    base = {"device": "cpu", "model": "tiny", "reps": 1, "threads": 1, "seconds": 0.5, "ref_seconds": 0.25}
    return {"config": asdict(config), "batch": batch, "save": None, "rtf": True, **base, **extra}


def test_rtf_settings_are_the_four_of_make_bench(sampling) -> None:
    configs = sampling.suite_configs("rtf")
    assert [c.name for c in configs] == list(EXPECTED_CALLS)
    assert all(c.side == "f5lite" and not c.compiled for c in configs)
    bf16 = sampling.suite_configs("rtf", dtype="bf16", compiled=True)
    assert len(bf16) == 8 and {c.precision for c in bf16} == {"bf16"} and sum(c.compiled for c in bf16) == 4


def test_rtf_worker_counts_backbone_calls_and_times_the_vocoder(sampling, monkeypatch) -> None:
    given = []
    real = f5lite.sample

    def spy(backbone, cond, text, duration, options=None, **kwargs):
        given.append(options)
        return real(backbone, cond, text, duration, options, **kwargs)

    monkeypatch.setattr(f5lite, "sample", spy)
    for config in sampling.suite_configs("rtf"):
        given.clear()
        record = sampling.run_worker(spec(config, reps=2))
        assert record["backbone_calls"] == EXPECTED_CALLS[config.name], config.name
        assert record["backbone_batch"] == [4]  # CFG: conditional and unconditional in one call of batch 2 x 2
        assert len(record["times"]) == 2 and min(record["times"]) > 0 and record["vocoder_s"] > 0
        # Batch 2: 47 and 35 generated frames (the second three quarters of the first), at 24 kHz, hop 256.
        assert record["generated_s"] == pytest.approx((47 + 35) * 256 / 24000, abs=1e-4)
        warmup, *timed = given
        assert warmup.steps == 1 and not warmup.cfg_zero_star  # the warm-up's single eager step
        assert all(o == timed[0] for o in timed) and len(timed) == 2
        options = timed[0]
        assert (options.steps, options.cfg_strength, options.sway) == (config.steps, 2.0, -1.0)
        assert (options.cfg_zero_init_steps, options.cfg_zero_star) == (int(config.zero_star), config.zero_star)
    # The settings' `auto` grids: 32 uniform steps, 16 and 7 on F5-TTS's EPSS tables.
    for steps, grid in ((32, "uniform"), (16, "epss"), (7, "epss")):
        assert torch.equal(time_grid(steps, "auto", None), time_grid(steps, grid, None))


def test_rtf_summary_and_report(sampling) -> None:
    configs = sampling.suite_configs("rtf")
    common = {"first_call_s": 0.1, "backbone_batch": [2], "generated_s": 5.0, "parameters": 2e6, "peak_rss_gb": 0.5}
    seconds = dict(zip(EXPECTED_CALLS, (16.0, 8.0, 3.5, 3.0), strict=True))
    records = {1: {}}
    for name, calls in EXPECTED_CALLS.items():
        records[1][name] = [{**common, "times": [seconds[name]], "backbone_calls": calls, "vocoder_s": 0.5}]
    args = argparse.Namespace(suite="rtf", rtf=True, model="mid", threads=2, rounds=1, reps=1, note="a note")
    args.ref_seconds, args.seconds = 2.0, 5.0
    result = sampling.summarize(records, {1: {}}, configs, args, None)
    data = result["batches"]["1"]
    assert data["rtf"]["f5lite 32 steps, fp32"] == 3.2 and data["rtf_with_vocoder"]["f5lite 32 steps, fp32"] == 3.3
    assert data["backbone_calls"] == EXPECTED_CALLS and data["ratio_to_base"] == {} and "targets" not in data
    assert result["versions"]["f5-tts"] is None and result["model"]["dim"] == 512
    page = sampling.markdown(result)
    assert "| f5lite 7 EPSS + CFG-Zero*, fp32 | 3.000 | 0.600 | 0.500 | 0.700 | 6 x 2 | 0.10 | 0.50 |" in page
    assert "vs F5-TTS" not in page and "mel diff" not in page  # no column without a value
    assert "Note: a note" in page


@pytest.mark.slow
def test_make_bench_sampling_runs_without_f5tts(tmp_path: Path) -> None:
    """`make bench`'s command on the tiny DiT, as a user runs it: every setting in its own process."""
    argv = [sys.executable, str(SCRIPT), "--rtf", "--model", "tiny", "--threads", "1", "--rounds", "1"]
    argv += ["--batches", "2", "--seconds", "0.5", "--ref-seconds", "0.25", "--out-dir", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "infer_cpu.json").read_text())
    if importlib.util.find_spec("f5_tts") is None:
        assert report["versions"]["f5-tts"] is None
    assert report["suite"] == "rtf" and report["machine"]["cpu"] and report["versions"]["torch"]
    data = report["batches"]["2"]
    assert data["backbone_calls"] == EXPECTED_CALLS and set(data["vocoder_s"]) == set(EXPECTED_CALLS)
    assert all(data["rtf_with_vocoder"][k] > data["rtf"][k] > 0 for k in EXPECTED_CALLS)
    assert set(data["mel_diff"]) == set(EXPECTED_CALLS) - {"f5lite 32 steps, fp32"}  # against the 32 steps
    table = [line for line in (tmp_path / "infer_cpu.md").read_text().splitlines() if line.startswith("| ")]
    assert len(table) == 2 + len(EXPECTED_CALLS) and table[-1].startswith("| f5lite 7 EPSS + CFG-Zero*, fp32 |")
    assert "| 6 x 4 |" in table[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batches", "1,x"], "--batches: '1,x' is not a comma-separated list of integers"),
        (["--batches", "0,8"], "--batches: '0,8' needs integers >= 1"),
        (["--reps", "0"], "argument --reps: '0' is not an integer >= 1"),
        (["--rounds", "1.5"], "argument --rounds: '1.5' is not an integer >= 1"),
        (["--seconds", "0"], "--seconds must be > 0"),
        (["--ref-seconds", "nan"], "--ref-seconds >= 0"),
        (["--dtype", "fp8"], "argument --dtype: invalid choice"),
        (["--model", "huge"], "argument --model: invalid choice"),
        (["--device", "tpu"], "argument --device: invalid choice"),
        (["--defaults"], "not allowed with argument --rtf"),
    ],
)
def test_bad_arguments_stop_with_one_line(sampling, capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exc:
        sampling.main(["--rtf", *argv])
    assert exc.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("compare_f5tts_sampling.py: error: ") and message in error

"""scripts/bench_train.py, f5lite's side, on the tiny preset: one configuration's JSON record and its arithmetic, the
memory observables of activation checkpointing, checkpoint stalls, the labels, and the ablation's result files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType

import pytest
import torch
from support.scripts import load_script

from benchmarks.flops import training_flops
from f5lite.models import build_backbone

TINY = ["--preset", "tiny", "--threads", "1", "--steps", "2", "--warmup", "1", "--mel-lengths", "40,56"]
TINY += ["--text-lengths", "10,12", "--device", "cpu"]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_train")


def record(bench: ModuleType, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert bench.main([*TINY, *extra]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_record_fields_and_arithmetic(bench, capsys) -> None:
    r = record(bench, capsys, "--config", "f5lite fp32 + async checkpoint")
    assert r["label"] == "f5lite fp32 + async checkpoint" and r["threads"] == 1 and r["precision"] == "no"
    assert r["frames_per_s"] == pytest.approx(96 / r["step_s"]) and len(r["losses"]) == 3
    parts = r["forward_s"] + r["backward_s"] + r["optimizer_s"] + r["ema_s"]
    assert r["forward_s"] > 0 and r["backward_s"] > 0 and parts == pytest.approx(r["step_s"], rel=0.2)
    assert r["params"] > 0 and r["peak_rss_bytes"] > 0 and r["saved_for_backward_bytes"] > 0
    assert r["mfu"] == pytest.approx(r["model_flops_per_step"] / r["step_s"] / r["peak_flops"])
    assert "GEMM" in r["peak_source"] and "peak_gpu_bytes" not in r  # a CPU: a measured peak, no GPU memory
    assert r["ckpt"] == "async" and 0 < r["ckpt_stall_s"] <= r["ckpt_write_s"]


def test_mfu_counts_the_model_flops_of_the_real_frames(bench, capsys) -> None:
    """A padded batch's FLOPs are those of its real frames: a padded step and a packed one compare."""
    r = record(bench, capsys, "--config", "f5lite fp32")
    with torch.device("meta"):
        backbone = build_backbone("dit", **bench.DITS["tiny"], text_num_embeds=bench.F5TTS_VOCAB_SIZE)
    assert r["model_flops_per_step"] == pytest.approx(training_flops(backbone, [40, 56], [10, 12]), rel=1e-9)
    assert r["model_flops_per_step"] < training_flops(backbone, [56, 56], [10, 12])


def test_the_cpu_clock_times_the_steps_by_this_process_s_cpu_time(bench, capsys, monkeypatch) -> None:
    ticks = iter(range(10**6))  # a CPU clock that advances one second a reading, whatever the wall clock does
    monkeypatch.setattr(bench.time, "process_time", lambda: float(next(ticks)))
    r = record(bench, capsys, "--clock", "cpu", "perf.precision=no")
    assert r["clock"] == "cpu" and r["step_s"] == 4.0 and r["forward_s"] == r["ema_s"] == 1.0  # one reading a part
    assert record(bench, capsys, "perf.precision=no")["clock"] == "wall"


def test_activation_checkpointing_saves_fewer_bytes(bench, capsys) -> None:
    plain = record(bench, capsys, "--config", "f5lite fp32")
    every = record(bench, capsys, "--config", "f5lite fp32 + AC")
    assert every["saved_for_backward_bytes"] < 0.6 * plain["saved_for_backward_bytes"]
    assert every["model_flops_per_step"] == plain["model_flops_per_step"]  # recompute is not model FLOPs


def test_labels_name_a_side_a_precision_and_levers(bench) -> None:
    assert bench.parse_label("f5lite") == ("f5lite", None, [])
    assert bench.parse_label("F5-TTS bf16 + compile") == ("F5-TTS", "bf16", ["compile"])
    assert bench.parse_label("f5lite fp32 + AC every 2nd") == ("f5lite", "no", ["AC every 2nd"])
    ablation = bench.labels("ablation")
    assert ablation[0] == "f5lite fp32" and len(ablation) == 13 and not any("F5-TTS" in a for a in ablation)
    assert bench.labels("f5lite fp32,ablation") == ablation  # once each, in order
    assert bench.labels("f5tts")[:2] == ["F5-TTS fp32", "F5-TTS bf16"]
    for bad in ("F5-TTS bf16 + pack", "f5lite fp16", "f5lite bf16 + nothing", "E2-TTS"):
        with pytest.raises(argparse.ArgumentTypeError, match="is no SIDE"):
            bench.parse_label(bad)


def test_bad_arguments(bench, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(["--mel-lengths", "40,56", "--text-lengths", "10"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        bench.parse_args(["--mel-lengths", "40,x"])
    assert "not a comma-separated list of integers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.parse_args(["--configs", "f5lite fp32,no such configuration"])
    assert "'no such configuration' is no SIDE" in capsys.readouterr().err
    assert bench.main([*TINY, "perf.ac.every_n=-1"]) == 2
    assert "perf.ac.every_n" in capsys.readouterr().err


@pytest.mark.slow  # runs part of the ablation end to end, each configuration in its own process (about 30 s)
def test_ablation_writes_json_and_table(bench: ModuleType, tmp_path: Path, capsys) -> None:
    only = "f5lite fp32,f5lite fp32 + AC,f5lite fp32 + sync checkpoint,f5lite fp32 + async checkpoint"
    argv = ["--configs", only, *TINY, "--steps", "1", "--warmup", "0", "--out-dir", str(tmp_path)]
    assert bench.main(argv) == 0
    result = json.loads((tmp_path / "ablation_cpu.json").read_text())
    assert list(result["configs"]) == only.split(",") and result["failed"] == result["skipped"] == {}
    assert result["ratios"] == {}  # no F5-TTS configuration, no ratio
    base, ac = result["configs"]["f5lite fp32"], result["configs"]["f5lite fp32 + AC"]
    assert base["speedup"] == 1.0 and ac["saved_bytes_ratio"] < 0.6
    table = (tmp_path / "ablation_cpu.md").read_text()
    assert table.count("\n| ") == 2 + len(result["configs"]) and "of a synchronous save" in table

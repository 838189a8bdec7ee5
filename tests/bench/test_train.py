"""scripts/bench_train.py (and its --ablate) on the tiny preset: the JSON record, its arithmetic, the memory
observables of activation checkpointing, checkpoint stalls, and the ablation's result files."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from support.scripts import load_script

TINY = ["--preset", "tiny", "--threads", "1", "--steps", "2", "--warmup", "1", "--mel-lengths", "40,56"]
TINY += ["--text-lengths", "10,12"]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_train")


def record(bench: ModuleType, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert bench.main([*TINY, *extra]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_record_fields_and_arithmetic(bench, capsys) -> None:
    r = record(bench, capsys, "--ckpt", "async")
    assert r["mel_lengths"] == [40, 56] and r["text_lengths"] == [10, 12] and r["threads"] == 1
    assert r["frames_per_s"] == pytest.approx(96 / r["step_s"])
    assert 0 < r["forward_s"] + r["backward_s"] + r["optimizer_s"] <= r["step_s"] * 1.05
    assert r["params"] > 0 and r["peak_memory_bytes"] > 0 and r["saved_for_backward_bytes"] > 0
    assert r["mfu"] == pytest.approx(r["model_flops_per_step"] / r["step_s"] / r["peak_flops"])
    assert r["ckpt"] == "async" and 0 < r["ckpt_stall_s"] <= r["ckpt_write_s"]


def test_the_cpu_clock_times_the_steps_by_this_process_s_cpu_time(bench, capsys, monkeypatch) -> None:
    ticks = iter(range(10**6))  # a CPU clock that advances one second a reading, whatever the wall clock does
    monkeypatch.setattr(bench.time, "process_time", lambda: float(next(ticks)))
    r = record(bench, capsys, "--clock", "cpu", "perf.precision=no")
    assert r["clock"] == "cpu" and r["step_s"] == 3.0 and r["forward_s"] == 1.0
    assert record(bench, capsys, "perf.precision=no")["clock"] == "wall"


def test_activation_checkpointing_saves_fewer_bytes(bench, capsys) -> None:
    plain = record(bench, capsys, "perf.precision=no")
    every = record(bench, capsys, "perf.precision=no", "perf.ac.mode=full", "perf.ac.every_n=1")
    assert every["saved_for_backward_bytes"] < 0.6 * plain["saved_for_backward_bytes"]
    assert every["model_flops_per_step"] == plain["model_flops_per_step"]  # recompute is not model FLOPs


def test_bad_arguments(bench, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(["--mel-lengths", "40,56", "--text-lengths", "10"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        bench.parse_args(["--mel-lengths", "40,x"])
    assert "not a comma-separated list of integers" in capsys.readouterr().err
    assert bench.main([*TINY, "perf.ac.every_n=-1"]) == 2
    assert "perf.ac.every_n" in capsys.readouterr().err


@pytest.mark.slow  # runs the ablation end to end (about 30 s); `make test-slow`
def test_ablation_writes_json_table_and_chart(bench: ModuleType, tmp_path: Path, capsys) -> None:
    only = "baseline fp32,AC full every block,sync checkpoint,async checkpoint"
    argv = ["--ablate", "--preset", "tiny", "--threads", "1", "--steps", "1", "--warmup", "0", "--mel-lengths", "40,56"]
    argv += ["--text-lengths", "10,12", "--only", only, "--out-dir", str(tmp_path), "--device", "cpu"]
    assert bench.main(argv) == 0
    records = json.loads((tmp_path / "ablation_cpu.json").read_text())
    assert [r["label"] for r in records] == only.split(",")
    assert all("error" not in r for r in records)
    base, ac = records[0], records[1]
    assert base["speedup"] == 1.0 and ac["saved_bytes_ratio"] < 0.6
    table = (tmp_path / "ablation_cpu.md").read_text()
    assert table.count("\n| ") == 2 + len(records) and "of a synchronous save" in table
    assert (tmp_path / "ablation_cpu.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit):
        bench.main(["--ablate", "--only", "no such configuration", "--out-dir", str(tmp_path)])
    assert "--only must name a configuration" in capsys.readouterr().err

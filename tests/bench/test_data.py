"""scripts/bench_data.py's loader and `--scale` modes on tiny settings: the records, their arithmetic and the result
files; and (slow) the real 2,000,000-cut start-up and memory goals. `--batching`: tests/bench/test_batching.py."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load(name: str = "bench_data") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.heavy
def test_bench_data_quick_records_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = load()
    argv = ["--quick", "--kinds", "mels", "--workers", "0,1", "--out-dir", str(tmp_path)]
    assert bench.main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [(r["kind"], r["workers"]) for r in lines] == [("mels", 0), ("mels", 1)]
    quick = bench.PROFILES["quick"]
    for r in lines:
        assert "error" not in r
        assert (r["frames_per_gpu"], r["max_samples"], r["batches"]) == (4000, 8, quick["batches"])
        # The arithmetic the table rests on: one mel frame is 256 samples at 24 kHz.
        assert r["audio_s"] == pytest.approx(r["frames"] * 256 / 24000)
        assert r["audio_s_per_s"] == pytest.approx(r["frames"] * 256 / 24000 / r["measured_s"])
        assert r["batches_per_s"] == pytest.approx(r["batches"] / r["measured_s"])
        if r["audio_s_per_cpu_s"] is not None:  # None when the batches took less than a clock tick of CPU
            assert r["audio_s_per_cpu_s"] == pytest.approx(r["audio_s"] / r["cpu_s"])
        assert r["cpu_s"] >= 0 and r["load_before"] >= 0
        assert 0 < r["first_batch_s"] <= r["build_s"] + r["warmup_s"] + 1e-6
        # Each batch keeps to the budget (Lhotse may pass it by one frame per utterance).
        assert 0 < r["cuts"] <= r["batches"] * r["max_samples"]
        assert 0 < r["frames"] <= r["batches"] * (r["frames_per_gpu"] + r["max_samples"])
        assert r["main_peak_rss"] > 100e6 and len(r["worker_peak_rss"]) == r["workers"]
        assert all(p > 100e6 for p in r["worker_peak_rss"])
        assert r["batches_per_s_rounds"] == [round(r["batches_per_s"], 4)]
    result = json.loads((tmp_path / "data_cpu.json").read_text())
    assert result["records"] == lines and result["reference"]["measured"] is False
    assert result["reference"]["audio_s_per_s"] == pytest.approx(38400 * 256 / 24000 / bench.REFERENCE_STEP_S)
    assert {"cpu", "logical_cores"} <= result["machine"].keys() and {"torch", "lhotse"} <= result["versions"].keys()
    assert result["date"]
    table = (tmp_path / "data_cpu.md").read_text()
    assert table.count("\n| mel cache") == 2 and "Reference (not measured here)" in table
    assert str(result["machine"]["cpu"]) in table


def test_bench_data_options() -> None:
    bench = load()
    full = bench.parse_args([])
    assert (full.frames_per_gpu, full.max_samples, full.workers, full.kinds) == (
        38400,
        64,
        [0, 1, 2],
        list(bench.KINDS),
    )
    # Enough repeated cuts for every batch even if each held max_samples utterances.
    assert full.copies * full.clips >= (full.warmup + full.batches) * full.max_samples
    assert bench.parse_args(["--quick", "--batches", "5"]).batches == 5
    with pytest.raises(SystemExit):
        bench.parse_args(["--kinds", "mels,wav"])
    assert (bench.parse_args(["--scale"]).scale, bench.parse_args(["--scale", "2000"]).workers) == (2_000_000, [2])
    assert bench.parse_args(["--scale"]).name == "scale_cpu" and bench.parse_args(["--batching"]).name == "batching"
    for bad in (["--clips", "500"], ["--scale", "0"], ["--scale", "--workers", "1,2"], ["--scale", "--batching"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


@pytest.mark.slow  # a scale run in child processes (about 16 s); `make test-slow`
def test_scale_tiny_writes_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scale = load()
    argv = ["--scale", "2000", "--baseline", "1000", "--updates", "1", "--cache-dir", str(tmp_path / "cache")]
    assert scale.main([*argv, "--out-dir", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "scale_cpu.json").read_text())
    small, large = result["runs"]
    assert (small["cuts"], large["cuts"]) == (1000, 2000)
    for run in result["runs"]:
        assert run["exit_code"] == 0, run
        assert 0 < run["imported_s"] < run["trainer_ready_s"] <= run["first_batch_s"] < run["first_update_s"]
        assert run["main_peak_rss"] > 100e6 and len(run["worker_peak_rss"]) == 2
    verdict = result["verdict"]
    assert set(verdict["peak_rss_growth"]) == {"main", "worker 0", "worker 1"}
    assert verdict["start_goal_met"] and verdict["memory_goal_met"]
    assert "2,000 cuts against 1,000" in (tmp_path / "scale_cpu.md").read_text()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == verdict
    # The cuts are what f5lite-prepare writes: unique ids, token ids and frames, real audio files.
    with gzip.open(large["file"], "rt") as lines:
        cuts = [json.loads(line) for line in lines]
    assert len(cuts) == 2000 and len({c["id"] for c in cuts}) == 2000
    assert all(c["custom"]["token_ids"] and c["custom"]["frames"] > 0 for c in cuts)
    assert all(Path(c["recording"]["sources"][0]["source"]).is_file() for c in cuts[:16])
    # A second run reuses the files instead of writing them again.
    assert scale.cuts_file(2000, tmp_path / "cache")[1] == 0.0


@pytest.mark.slow
def test_scale_two_million_cuts_meets_the_goals(tmp_path: Path) -> None:
    """Training on 2,000,000 cuts starts within 60 s and no process peaks 1 GB higher than with 1,000 cuts.

    The CutSet (about 30 MB, minutes to write) is kept in the system's temporary folder and reused.
    """
    scale = load()
    assert scale.main(["--scale", "--out-dir", str(tmp_path)]) == 0  # 2,000,000 cuts by default
    result = json.loads((tmp_path / "scale_cpu.json").read_text())
    large = result["runs"][1]
    assert large["exit_code"] == 0, large
    assert large["first_update_s"] <= 60, large
    growth = result["verdict"]["peak_rss_growth"]
    assert max(growth.values()) <= 1e9, growth

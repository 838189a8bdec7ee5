"""scripts/bench_serve.py as a user runs it (a subprocess, the tiny model): under load, and --clone (upload, speak, identify)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("av")

from support.infer_assets import make_model_files  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_serve.py"


@pytest.mark.slow  # two server processes and their load (about 20 s); `make test-slow`
def test_the_benchmark_compares_batched_and_unbatched_servers(tmp_path: Path) -> None:
    export, _ = make_model_files(tmp_path)
    command = [sys.executable, str(SCRIPT), "--model", str(export), "--clients", "3", "--seconds", "3", "--rounds",
               "1", "--out-dir", str(tmp_path), "--name", "t", "--server-args", "sample.vocoder=griffin_lim",
               "sample.steps=2", "--batch-wait-ms", "200"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads((tmp_path / "t.json").read_text())
    assert {"date", "machine", "versions"} <= set(document)
    rows = {row["config"]: row for row in document["rows"]}
    assert set(rows) == {"batched", "unbatched"}
    for row in rows.values():
        assert row["requests"] >= 3 and row["errors"] == 0
        assert 0 < row["first_audio_p50_s"] <= row["latency_p50_s"] <= row["latency_p95_s"]
        assert row["rss_mb_before"] > 0 and row["rss_mb_after"] > 0 and row["real_time_factor"] > 0
    assert rows["unbatched"]["sampler_calls"] == rows["unbatched"]["pieces"]  # --max-batch 1: one piece per call
    assert rows["batched"]["sampler_calls"] < rows["batched"]["pieces"]  # three clients: shared calls
    assert "| batched | 1 |" in (tmp_path / "t.md").read_text()


@pytest.mark.slow  # a server, two uploads and four requests scored by Resemblyzer (about 40 s); `make test-slow`
def test_clone_uploads_each_held_out_voice_speaks_and_identifies(tmp_path: Path) -> None:
    from support.eval_cli_assets import demo_clips

    from f5lite.data.testset import TestRow, write_testset
    from f5lite.metrics.voices import ENROLLMENT_HEADER

    export, _ = make_model_files(tmp_path)
    clips = demo_clips()
    (tmp_path / "corpus" / "test").mkdir(parents=True)
    splits = {"us_male": "train", "us_female": "held_out", "caribbean_female": "held_out"}
    enrollment = [f"{voice}|{split}|{clip}" for voice, split in splits.items() for clip, _ in clips[voice][2:4]]
    (tmp_path / "corpus" / "test" / "voices.txt").write_text("\n".join([ENROLLMENT_HEADER, *enrollment]) + "\n")
    rows = [TestRow(f"{voice}_{k}", clips[voice][0][0], clips[voice][0][1], clips[voice][k][1], None, voice)
            for voice in ("us_female", "caribbean_female") for k in (1, 2)]  # fmt: skip
    write_testset(tmp_path / "corpus" / "test" / "testset.txt", rows)
    command = [sys.executable, str(SCRIPT), "--model", str(export), "--clone", str(tmp_path / "corpus"), "--rows", "2",
               "--out-dir", str(tmp_path), "--server-args", "sample.vocoder=griffin_lim", "sample.steps=2"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads((tmp_path / "clone_serve_cpu.json").read_text())
    assert {"date", "machine", "versions"} <= set(document) and len(document["rows"]) == 4
    assert [r["voice"] for r in document["rows"]] == ["us_female"] * 2 + ["caribbean_female"] * 2
    for row in document["rows"]:
        assert 0 < row["first_audio_s"] <= row["request_s"] and row["audio_s"] > 0 and -1 <= row["sim"] <= 1
        assert row["speaker_top1"] in splits
    summary = document["summary"]
    assert set(summary) == {"all", "us_female", "caribbean_female"} and summary["all"]["requests"] == 4
    assert summary["all"]["top1"] == sum(r["speaker_correct"] for r in document["rows"]) / 4
    assert "| caribbean_female | 2 |" in (tmp_path / "clone_serve_cpu.md").read_text()

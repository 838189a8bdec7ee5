"""scripts/bench_serve.py as a user runs it (a subprocess, a few seconds per configuration, the tiny model)."""

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

"""scripts/bench_duration.py: one interleaved round on debug_tiny end to end (a process per variant), the summary's
arithmetic over rounds, and the options it refuses."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_duration", SCRIPTS / "bench_duration.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # two trainer processes end to end (about 15 s); `make test-slow`
def test_one_round_on_debug_tiny(bench, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "duration.json"
    argv = ["--recipe", "debug_tiny", "--repeats", "1", "--updates", "2", "--warmup", "0", "--threads", "1"]
    assert bench.main([*argv, "--out", str(out), "eval.every=0"]) == 0
    result = json.loads(out.read_text())
    none, small = result["runs"]
    assert (none["variant"], small["variant"]) == ("none", "small")
    for r in (none, small):
        assert "error" not in r and r["threads"] == 1 and r["updates"] == 2 and len(r["update_s"]) == 2
        assert r["s_per_update"] == pytest.approx(sum(r["update_s"]) / 2, rel=1e-3)
    assert none["frames"] == small["frames"] > 0  # the very same batches
    assert none["predictor_params"] == 0 and 0 < small["predictor_params"] < small["flow_params"]
    assert "predictor_s_per_update" not in none and len(small["predictor_update_s"]) == 2
    assert 0 < small["predictor_s_per_update"] < small["s_per_update"]
    assert none["flow_params"] == small["flow_params"]
    summary = result["summary"]
    assert summary["ratio"] == pytest.approx(small["s_per_update"] / none["s_per_update"])
    assert summary["paired_ratio_median"] == pytest.approx(summary["ratio"])
    assert summary["params"]["predictor"] == small["predictor_params"]
    share = small["predictor_s_per_update"] / small["s_per_update"]
    assert summary["predictor_share_median"] == pytest.approx(share) and summary["predictor_shares"] == [
        round(share, 4)
    ]
    assert result["settings"]["variants"] == ["duration=none", "duration=small"]
    assert (
        result["settings"]["overrides"] == ["eval.every=0"]
        and "cpu" in result["machine"]
        and "torch" in result["versions"]
    )
    printed = capsys.readouterr().out
    assert (
        "ratio small/none" in printed
        and "same process" in printed
        and "predictor 54,593" in printed
        and str(out) in printed
    )


def test_summary_over_interleaved_rounds(bench) -> None:
    def rec(variant: str, s: float) -> dict:
        return {
            "variant": variant,
            "s_per_update": s,
            "flow_params": 1000,
            "predictor_params": 50 * (variant != "none"),
        }

    runs = [rec("none", 1.0), rec("small", 1.1), rec("none", 2.0), rec("small", 2.0), rec("none", 1.2)]
    runs += [{"variant": "small", "error": "boom"}]
    summary = bench.summarize(runs)
    assert summary["variants"]["none"]["s_per_update"] == 1.2 and summary["variants"]["none"]["rounds"] == [1, 2, 1.2]
    assert summary["variants"]["small"]["s_per_update"] == pytest.approx(1.55)
    assert summary["ratio"] == pytest.approx(1.55 / 1.2) and summary["paired_ratios"] == [1.1, 1.0]
    assert summary["paired_ratio_median"] == pytest.approx(1.05)  # the failed round has no pair
    assert summary["params"] == {"flow": 1000, "predictor": 50, "ratio": 0.05}
    assert summary["predictor_share_median"] is None  # no record timed the predictor alone
    failed = bench.summarize([rec("none", 1.0), {"variant": "small", "error": "boom"}])
    assert failed["ratio"] is None and failed["variants"]["small"] is None and failed["params"] is None
    settings = {"recipe": "r", "overrides": [], "updates": 1, "warmup": 0, "repeats": 1}
    assert "failed" in bench.table({"summary": failed, "settings": settings})


def test_bad_arguments(bench, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.parse_args([]).recipe == "demo"
    for argv in (["--repeats", "0"], ["--warmup", "-1"], ["duration=small"], ["run_dir=/tmp/x"]):
        with pytest.raises(SystemExit):
            bench.parse_args(argv)
    assert "may not set duration or run_dir" in capsys.readouterr().err

"""scripts/bench_infer.py: quick run on a tiny DiT (call counts, JSON fields, report files), argument errors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

import f5lite

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_infer.py"
# Backbone calls of the four settings: 32 uniform, 16, 7 EPSS, 7 EPSS with one zero-init step.
EXPECTED_CALLS = {"32 uniform": 32, "16": 16, "7 EPSS": 7, "7 EPSS + CFG-Zero*": 6}
ROW_KEYS = {
    "setting",
    "steps",
    "schedule",
    "cfg_zero_init_steps",
    "cfg_zero_star",
    "batch",
    "backbone_calls",
    "backbone_batch",
    "sample_s",
    "vocoder_s",
    "total_s",
    "rtf",
    "rtf_with_vocoder",
    "sample_s_runs",
    "vocoder_s_runs",
}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_infer", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_infer"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    yield module
    del sys.modules["bench_infer"]


def test_quick_run_counts_backbone_calls_and_writes_reports(bench, tmp_path, capsys, monkeypatch):
    given = []
    real = f5lite.sample

    def spy(backbone, cond, text, duration, options=None, **kwargs):
        given.append(options)
        return real(backbone, cond, text, duration, options, **kwargs)

    monkeypatch.setattr(f5lite, "sample", spy)
    argv = ["--quick", "--seconds", "0.5", "--ref-seconds", "0.25", "--batches", "1,2", "--warmup", "0"]
    assert bench.main([*argv, "--threads", "1", "--out-dir", str(tmp_path)]) == 0
    # Per batch size: one step for the vocoder's input, then each setting's options, passed whole.
    vocoder_input = f5lite.SamplerOptions(steps=1, cfg_strength=2.0, sway=-1.0)
    assert given == [vocoder_input, *(setting.options for setting in bench.SETTINGS)] * 2
    assert all(s.options.cfg_strength == 2.0 and s.options.sway == -1.0 for s in bench.SETTINGS)

    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(row["batch"], row["setting"]) for row in rows] == [(b, name) for b in (1, 2) for name in EXPECTED_CALLS]
    report = json.loads((tmp_path / "infer_cpu_quick.json").read_text())
    assert report["results"] == rows
    audio_s = report["audio_seconds"]
    assert report["frames"] == {"reference": 23, "generated": 47}
    assert audio_s == pytest.approx(47 * 256 / 24000)
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["backbone_calls"] == EXPECTED_CALLS[row["setting"]]
        assert row["backbone_batch"] == [2 * row["batch"]]  # CFG: conditional and unconditional in one call
        assert len(row["sample_s_runs"]) == len(row["vocoder_s_runs"]) == 1
        assert row["sample_s"] > 0 and row["vocoder_s"] > 0
        assert row["total_s"] == pytest.approx(row["sample_s"] + row["vocoder_s"], abs=2e-6)
        per_audio = row["batch"] * audio_s
        assert row["rtf"] == pytest.approx(row["sample_s"] / per_audio, rel=1e-3, abs=1e-5)
        assert row["rtf_with_vocoder"] == pytest.approx(row["total_s"] / per_audio, rel=1e-3, abs=1e-5)
    machine = report["machine"]
    assert machine["torch_threads"] == 1 and machine["cpu"] and machine["torch"]
    assert report["model"]["dim"] == 64
    assert (report["cfg_strength"], report["sway"]) == (2.0, -1.0)
    for row in rows:
        options = next(s.options for s in bench.SETTINGS if s.name == row["setting"])
        assert {key: row[key] for key in bench.VARIED} == {key: getattr(options, key) for key in bench.VARIED}

    table = [line for line in (tmp_path / "infer_cpu_quick.md").read_text().splitlines() if line.startswith("| ")]
    assert len(table) == 2 + len(rows)
    assert table[-1].startswith("| 7 EPSS + CFG-Zero* | 2 | 6 x 4 |")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batches", "1,x"], "--batches '1,x' is not valid"),
        (["--batches", "0,8"], "--batches must be at least 1, got 0"),
        (["--repeats", "0"], "--repeats must be at least 1"),
        (["--seconds", "0"], "--seconds must be > 0"),
        (["--dtype", "fp8"], "argument --dtype: invalid choice"),
        (["--device", "tpu"], "device='tpu' is not valid"),
        (["--ref-seconds", "inf"], "--ref-seconds >= 0"),
        (["depth"], "override 'depth' is not valid; write key=value"),
        (["no_such_option=3"], "cannot build dit"),
        (["--quick", "--recipe", "dit_base"], "leave out --recipe"),
        (["--recipe", "no_such_recipe"], "no_such_recipe"),
    ],
)
def test_bad_arguments_stop_with_one_line(bench, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(argv)
    assert exc.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("bench_infer.py: error: ") and message in error


def test_recipe_model_section_with_overrides(bench):
    name, kwargs = bench.model_spec("debug_tiny", False, ["depth=3", "qk_norm=rms_norm", "text_mask_padding=false"])
    assert name == "dit"
    assert (kwargs["dim"], kwargs["depth"], kwargs["text_dim"]) == (64, 3, 32)
    assert kwargs["qk_norm"] == "rms_norm" and kwargs["text_mask_padding"] is False
    assert kwargs["text_num_embeds"] == bench.TEXT_NUM_EMBEDS  # the recipe leaves it to a vocab.txt

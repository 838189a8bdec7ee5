"""`f5lite-eval` gives the same numbers on the same audio whichever CPU kernels torch picks: a user compares scores
across runs, machines and days, so a metric must move with the audio, not with the instruction set."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf
import torch
import torchaudio
from support.eval_cli_assets import eval_rows

from f5lite.data.testset import write_testset

pytestmark = pytest.mark.slow


def capabilities() -> list[str]:
    """The kernel sets this CPU can run: `default` always, `avx2` and `avx512` when /proc/cpuinfo lists them."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    found = ["default"]
    found += ["avx2"] if " avx2" in flags else []
    found += ["avx512"] if " avx512f" in flags else []
    return found


def numbers(out: Path) -> dict[str, object]:
    """Every per-item result and summary mean, flattened to `id/key` (`gt/...` for the ground truth's floor)."""
    flat: dict[str, object] = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key, value in row.items():
            if isinstance(value, dict):
                flat.update({f"{row['id']}/{key}/{k}": v for k, v in value.items()})
            elif key != "audio":
                flat[f"{row['id']}/{key}"] = value
    summary = json.loads((out / "summary.json").read_text())
    flat.update({f"means/{k}": v for k, v in summary["means"].items()})
    return flat


def test_scores_are_the_same_under_every_kernel_set(tmp_path: Path) -> None:
    # "Generated" speech: each row's ground truth at 16 kHz and lower gain, so that every distance is nonzero and
    # resampling runs on both sides, and the F0 error rests on many voiced frames.
    rows = eval_rows(with_gt=3)
    write_testset(tmp_path / "set.lst", rows)
    (tmp_path / "audio").mkdir()
    for row in rows:
        assert row.gt_audio is not None
        wave, rate = sf.read(row.gt_audio, dtype="float32", always_2d=True)
        speech = torchaudio.functional.resample(torch.from_numpy(wave.mean(1)), rate, 16000) * 0.8
        sf.write(tmp_path / "audio" / f"{row.id}.wav", speech.numpy(), 16000)
    found = {}
    for capability in capabilities():
        out = tmp_path / capability
        command = [sys.executable, "-m", "f5lite.eval.cli", f"audio_dir={tmp_path / 'audio'}"]
        command += [f"testset={tmp_path / 'set.lst'}", f"output={out}", "metrics=[wer,sim,mos,mel]"]
        env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
        subprocess.run(command, env=env, check=True, capture_output=True, text=True)
        found[capability] = numbers(out)
    first, *others = found
    scored = found[first]
    assert {"means/mel_l1", "means/mcd", "means/f0_rmse", "means/sim", "means/mos", "means/wer"} <= scored.keys()
    for capability in others:
        assert found[capability].keys() == scored.keys(), capability
        for key, value in scored.items():
            other = found[capability][key]
            if isinstance(value, float):
                assert math.isclose(other, value, rel_tol=1e-3, abs_tol=1e-9), f"{key}: {capability} {other}, {value}"
            else:
                assert other == value, f"{key}: {capability} {other!r}, {first} {value!r}"

"""`make bench-gpu` without a GPU: the commands it runs are the ones the issue asks for, and each script accepts them.

The measurements themselves need CUDA and F5-TTS; their CPU path (the same configurations on a tiny model) is run by
tests/compat/test_compare_f5tts_train.py.
"""

from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def bench_gpu_commands() -> dict[str, list[list[str]]]:
    """The scripts `make -n bench-gpu` would run, by name, with the arguments of each run (on the CPU device)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(
        ["make", "-n", "bench-gpu", "BENCH_GPU_DEVICE=cpu"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    commands: dict[str, list[list[str]]] = {}
    for line in out.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        scripts = [w for w in words if w.startswith("scripts/") and w.endswith(".py")]
        if scripts:
            commands.setdefault(Path(scripts[0]).stem, []).append(words[words.index(scripts[0]) + 1 :])
    return commands


def test_bench_gpu_runs_the_step_the_whole_run_and_the_sampling_comparisons() -> None:
    commands = bench_gpu_commands()
    assert set(commands) == {"compare_f5tts_train", "compare_f5tts_run", "compare_f5tts_sampling"}

    step = load_script("compare_f5tts_train").parse_args(commands["compare_f5tts_train"][0])
    assert step.device == "cpu"  # BENCH_GPU_DEVICE reaches it (cuda by default)
    assert step.preset == "base" and sum(step.mel_lengths) == 38_400
    assert set(step.configs) >= {"f5lite bf16", "F5-TTS bf16", "f5lite bf16 + AC every 2nd", "f5lite bf16 + AC"}
    assert "F5-TTS bf16 + AC" in step.configs and "f5lite bf16 + compile" in step.configs

    # `--sides f5lite` only so that parsing does not need F5-TTS importable here (make bench-gpu installs it beside).
    assert "--sides" not in commands["compare_f5tts_run"][0]
    run = load_script("compare_f5tts_run").parse_args([*commands["compare_f5tts_run"][0], "--sides", "f5lite"])
    assert (run.model, run.precision, run.frames) == ("base", "bf16", 38_400)
    assert run.name == "f5tts_run_cpu" and run.out_dir == Path("scripts/results")

    parser = load_script("compare_f5tts_sampling").build_parser()
    defaults, fewstep = (parser.parse_args(args) for args in commands["compare_f5tts_sampling"])
    assert defaults.defaults and fewstep.fewstep  # F5-TTS's defaults against f5lite's paths, then the 4-step student
    for sampling in (defaults, fewstep):
        assert sampling.device == "cpu" and sampling.batches == "1,8"
        assert sampling.out_dir == Path("scripts/results")


def test_the_base_presets_are_f5tts_v1_base() -> None:
    """Both scripts' `base` is the architecture of configs/model/dit.yaml (F5-TTS v1 Base)."""
    from f5lite.config import compose_config

    model = compose_config(["+recipe=dit_base"]).model
    expected = {k: getattr(model, k) for k in ("dim", "depth", "heads", "ff_mult", "text_dim", "conv_layers")}
    for name, table in (("compare_f5tts_train", "PRESETS"), ("compare_f5tts_run", "MODELS")):
        preset = getattr(load_script(name), table)["base"]
        assert {k: preset[k] for k in expected} == expected, name

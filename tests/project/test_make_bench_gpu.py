"""`make bench-gpu` without a GPU: the commands it runs are the ones the issue asks for, each script accepts them, and
they fit one device call; `make bench-gpu-rehearse` runs the same command lines on the CPU with the tiny model (slow).

The measurements themselves need CUDA and F5-TTS; their CPU path (the same configurations on a tiny model) is run by
tests/compat/test_compare_f5tts_train.py (scripts/bench_train.py against F5-TTS) and by the rehearsal.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def make_commands(*target: str) -> dict[str, list[list[str]]]:
    """The scripts `make -n TARGET...` would run, by name, with the arguments of each run, and their time limits.

    The limit of a run (`timeout ... SECONDS`) is stored as the first item of its arguments, None without one.
    """
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", *target], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    commands: dict[str, list[list[str]]] = {}
    for line in out.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        scripts = [w for w in words if w.startswith("scripts/") and w.endswith(".py")]
        if scripts:
            limit = int(words[words.index("timeout") + 5]) if "timeout" in words else None
            commands.setdefault(Path(scripts[0]).stem, []).append([limit, *words[words.index(scripts[0]) + 1 :]])
    return commands


def bench_gpu_commands() -> dict[str, list[list[str]]]:
    """`make -n bench-gpu` on the CPU device, without the time limits."""
    return {
        name: [args[1:] for args in runs] for name, runs in make_commands("bench-gpu", "BENCH_GPU_DEVICE=cpu").items()
    }


def test_bench_gpu_runs_the_step_and_the_whole_run_in_one_device_call() -> None:
    limits = make_commands("bench-gpu", "BENCH_GPU_DEVICE=cpu")
    # One device call runs at most 10 minutes; the lease is 15 with the machine's start: 9 minutes with the install.
    assert all(runs[0][0] is not None for runs in limits.values())
    assert sum(runs[0][0] for runs in limits.values()) + 20 <= 9 * 60
    commands = bench_gpu_commands()
    assert set(commands) == {"bench_train", "compare_f5tts_run"}

    step = load_script("bench_train").parse_args(commands["bench_train"][0])
    assert step.device == "cpu"  # BENCH_GPU_DEVICE reaches it (cuda by default)
    assert step.preset == "base" and len(step.mel_lengths) * max(step.mel_lengths) <= 38_400
    assert step.lengths_from == "bucket" and len(set(step.mel_lengths)) > 1  # packing has padding to remove
    assert step.configs[0] == "F5-TTS bf16 + compile"  # the anchor first: a call cut short still has it
    assert set(step.configs) == {
        "F5-TTS bf16 + compile",
        "f5lite bf16 + compile",
        "f5lite bf16 + compile + pack",
        "f5lite bf16 + compile + fp8",
        "f5lite bf16 + compile + pack + fp8",
        "f5lite bf16 + AC every 2nd",
    }
    assert step.profile > 0  # where the time goes, on the GPU

    # `--sides f5lite` only so that parsing does not need F5-TTS importable here (make bench-gpu installs it beside).
    assert "--sides" not in commands["compare_f5tts_run"][0]
    run = load_script("compare_f5tts_run").parse_args([*commands["compare_f5tts_run"][0], "--sides", "f5lite"])
    assert run.f5tts_compile and "perf.compile=true" in run.f5lite_extra  # both trainers compiled
    assert (run.precision, run.frames) == ("bf16", 38_400)
    assert run.name == "f5tts_run_cpu" and run.out_dir == Path("scripts/results")


def test_bench_gpu_device_installs_the_carried_wheels_then_runs_the_same_commands() -> None:
    out = subprocess.run(["make", "-n", "bench-gpu-device"], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = out.stdout.replace("\\\n", " ").splitlines()
    install = next(i for i, line in enumerate(lines) if "pip install" in line)
    assert "--no-index" in lines[install] and "build/gpu-wheels/*.whl" in lines[install]
    runs = [i for i, line in enumerate(lines) if "scripts/compare_f5tts_run.py" in line or "bench_train.py" in line]
    assert runs and min(runs) > install and all(lines[i].split("timeout")[1].split()[5] == "python3" for i in runs)
    ours = make_commands("bench-gpu", "BENCH_GPU_DEVICE=cuda")
    device = make_commands("bench-gpu-device")
    assert device == ours  # the same scripts, arguments and time limits as make bench-gpu


def test_bench_gpu_sampling_is_its_own_target() -> None:
    commands = make_commands("bench-gpu-sampling", "BENCH_GPU_DEVICE=cpu")
    commands = {name: [args[1:] for args in runs] for name, runs in commands.items()}
    assert set(commands) == {"compare_f5tts_sampling"}
    parser = load_script("compare_f5tts_sampling").build_parser()
    defaults, fewstep = (parser.parse_args(args) for args in commands["compare_f5tts_sampling"])
    assert defaults.defaults and fewstep.fewstep  # F5-TTS's defaults against f5lite's paths, then the 4-step student
    for sampling in (defaults, fewstep):
        assert sampling.device == "cpu" and sampling.batches == [1, 8]
        assert sampling.out_dir == Path("scripts/results")


def test_the_base_presets_are_f5tts_v1_base() -> None:
    """`base` is the architecture of configs/model/dit.yaml (F5-TTS v1 Base): F5-TTS's DiT in the training step (the
    recipe's own on f5lite's side) and both trainers' in the whole runs."""
    from f5lite.config import compose_config

    model = compose_config(["+recipe=dit_base"]).model
    expected = {k: getattr(model, k) for k in ("dim", "depth", "heads", "ff_mult", "text_dim", "conv_layers")}
    assert load_script("bench_train").PRESETS["base"] == []  # f5lite: the recipe dit_base as it is
    presets = {
        "bench_train": load_script("bench_train").DITS,
        "compare_f5tts_run": load_script("compare_f5tts_run").MODELS,
    }
    for name, table in presets.items():
        preset = table["base"]
        assert {k: preset[k] for k in expected} == expected, name


@pytest.mark.slow
def test_the_cpu_rehearsal_runs_every_part_of_bench_gpu(tmp_path: Path) -> None:
    """`make bench-gpu-rehearse`: the same command lines on this CPU with the tiny model, F5-TTS beside. Every
    configuration runs or (fp8) is skipped in one line, each with where its step's time went, and the whole runs of
    both trainers, compiled, give their ratios (minutes: each compiled configuration compiles on two cores)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "rehearsal"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    done = subprocess.run(
        ["make", "bench-gpu-rehearse", f"BENCH_REHEARSAL_OUT={out}"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "(ignored)" not in done.stdout + done.stderr, done.stderr[-3000:]  # no part failed or ran out of time
    step = json.loads((out / "f5tts_train_cpu.json").read_text())
    assert step["failed"] == {} and set(step["skipped"]) == {
        "f5lite bf16 + compile + fp8",
        "f5lite bf16 + compile + pack + fp8",
    }
    assert set(step["configs"]) == {
        "F5-TTS bf16 + compile",
        "f5lite bf16 + compile",
        "f5lite bf16 + compile + pack",
        "f5lite bf16 + AC every 2nd",
    }
    assert all(row["profile"]["categories"]["matmul"]["ms"] > 0 for row in step["configs"].values())
    assert step["setup"]["lengths_from"] == "bucket" and step["ratios"]["f5lite bf16 + compile + pack"]["speed"] > 0
    run = json.loads((out / "f5tts_run_cpu.json").read_text())
    assert run["settings"]["f5tts_compile"] and "perf.compile=true" in run["settings"]["f5lite_overrides"]
    assert set(run["medians"]) == {"f5tts", "f5lite"} and run["ratios"]["wall_clock"] > 0

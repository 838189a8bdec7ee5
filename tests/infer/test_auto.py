"""The inference path `f5lite-infer` and the `Synthesizer` pick (`f5lite.infer.auto`): bf16 only with native bf16,
explicit settings win, compile where it pays, threads, the line that says which, and the auto path's output
against the fp32 path's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from support.golden import assert_golden
from support.infer_assets import GEN_TEXT, REF_TEXT, make_model_files, make_reference

import f5lite
import f5lite.infer.auto as auto
import f5lite.infer.synthesizer as synthesizer_module
from f5lite.infer.auto import COMPILE_MIN_CALLS, CpuInfo, choose_path, read_cpu_info
from f5lite.infer.cli import main

CPU = torch.device("cpu")
AVX2 = CpuInfo("AMD EPYC", frozenset({"avx", "avx2", "fma"}), "AVX2", 2)
XEON = CpuInfo("Intel Xeon", frozenset({"avx2", "avx512f", "avx512_bf16", "amx_tile"}), "AVX512", 8)
AMX = CpuInfo("Intel Xeon", frozenset({"avx2", "avx512f", "amx_bf16"}), "AVX512", 8)
ARM = CpuInfo("Neoverse", frozenset({"asimd", "bf16"}), "DEFAULT", 4)
NO_ENV: dict[str, str] = {}


def pick(cpu: CpuInfo, **kwargs):
    kwargs.setdefault("environ", NO_ENV)
    kwargs.setdefault("compiler", True)
    return choose_path(CPU, cpu=cpu, **kwargs)


@pytest.mark.parametrize(("cpu", "dtype"), [(AVX2, "fp32"), (XEON, "bf16"), (AMX, "bf16"), (ARM, "bf16")])
def test_bf16_only_where_the_cpu_has_native_bf16(cpu, dtype):
    path = pick(cpu)
    assert path.dtype == dtype
    assert ("no native bf16" in path.describe()) == (dtype == "fp32")
    assert f"{dtype} weights" in path.describe() and cpu.model in path.describe()


def test_cuda_bf16_follows_the_device():
    cuda = torch.device("cuda", 0)
    assert choose_path(cuda, cuda_bf16=True, compiler=True).dtype == "bf16"
    assert choose_path(cuda, cuda_bf16=False, compiler=True).dtype == "fp32"
    assert choose_path(cuda, cuda_bf16=True, compiler=True).threads is None  # a GPU leaves threads alone


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("cpu", [AVX2, XEON])
def test_an_explicit_dtype_wins(cpu, dtype):
    path = pick(cpu, dtype=dtype)
    assert path.dtype == dtype and not any(r.startswith(("bf16", "fp32")) for r in path.reasons)


def test_compile_explicit_wins_and_auto_waits_for_enough_calls():
    assert pick(AVX2, compile=True).compile and pick(AVX2, compile="true").compile
    off = pick(AVX2, compile=False)
    assert not off.compile and off.compile_min_calls is None and "eager" in off.describe()
    assert pick(AVX2, compile="False").compile_min_calls is None  # Hydra's spelling of compile=false
    eager = pick(AVX2)  # not shown to pay there
    assert eager.compile_min_calls is None and "no compile: not shown to pay" in eager.describe()
    waiting = pick(XEON)
    assert not waiting.compile and waiting.compile_min_calls == COMPILE_MIN_CALLS
    assert f">= {COMPILE_MIN_CALLS} backbone calls" in waiting.describe()
    assert waiting.compiled().compile and "compiled" in waiting.compiled().describe()
    no_compiler = pick(XEON, compiler=False)
    assert no_compiler.compile_min_calls is None and "no C++ compiler" in no_compiler.describe()


def test_threads_physical_cores_unless_omp_num_threads_or_explicit():
    assert pick(XEON).threads == 8 and "physical cores" in pick(XEON).describe()
    assert pick(XEON, environ={"OMP_NUM_THREADS": "3"}).threads is None
    assert "OMP_NUM_THREADS" in pick(XEON, environ={"OMP_NUM_THREADS": "3"}).describe()
    assert pick(XEON, threads=3).threads == 3
    assert pick(XEON, threads=3, environ={"OMP_NUM_THREADS": "5"}).threads == 3


CPUINFO = "\n\n".join(
    f"processor\t: {i}\nmodel name\t: Intel Xeon\nflags\t\t: fpu avx2 avx512_bf16\nphysical id\t: 0\ncore id\t\t: {i % 2}"
    for i in range(4)
)


def test_read_cpu_info_counts_physical_cores_this_process_may_use():
    info = read_cpu_info(CPUINFO, allowed={0, 1, 2, 3})
    assert info.model == "Intel Xeon" and info.native_bf16 and info.physical_cores == 2  # 4 hyper-threads, 2 cores
    assert read_cpu_info(CPUINFO, allowed={0}).physical_cores == 1
    assert not read_cpu_info(CPUINFO.replace(" avx512_bf16", ""), allowed={0}).native_bf16
    assert read_cpu_info("", allowed={0, 1, 2}).physical_cores == 3  # no /proc/cpuinfo: the CPUs allowed
    assert read_cpu_info().physical_cores >= 1


@pytest.mark.parametrize(
    ("kwargs", "key"), [({"dtype": "fp8"}, "dtype="), ({"compile": "maybe"}, "compile="), ({"threads": 0}, "threads=")]
)
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        pick(AVX2, **kwargs)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("auto")
    export, _ = make_model_files(root)
    return {"root": root, "export": export, "ref": make_reference(root)}


@pytest.fixture
def keep_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def load(files, monkeypatch, cpu: CpuInfo, **kwargs) -> f5lite.Synthesizer:
    monkeypatch.setattr(auto, "read_cpu_info", lambda: cpu)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    return f5lite.Synthesizer.from_pretrained(files["export"], vocoder="griffin_lim", device="cpu", **kwargs)


@pytest.mark.usefixtures("keep_threads")
def test_synthesizer_applies_and_exposes_the_path(files, monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="f5lite.infer.synthesizer"):
        synth = load(files, monkeypatch, XEON.__class__("Fake", XEON.flags, "AVX512", 1))
    assert synth.path.dtype == "bf16" and next(synth.backbone.parameters()).dtype == torch.bfloat16
    assert synth.path.threads == 1 and torch.get_num_threads() == 1
    assert synth.path.describe() in caplog.text
    explicit = load(files, monkeypatch, XEON, dtype="fp32", threads=2)
    assert explicit.path.dtype == "fp32" and next(explicit.backbone.parameters()).dtype == torch.float32
    assert torch.get_num_threads() == 2
    plain = load(files, monkeypatch, AVX2)
    assert plain.path.dtype == "fp32" and next(plain.backbone.parameters()).dtype == torch.float32


@pytest.mark.usefixtures("keep_threads")
def test_compile_auto_compiles_once_a_text_plans_enough_calls(files, monkeypatch):
    compiled = []
    monkeypatch.setattr(synthesizer_module, "apply_inference_compile", compiled.append)
    monkeypatch.setattr(auto, "COMPILE_MIN_CALLS", 6)
    monkeypatch.setattr(auto, "_has_compiler", lambda: True)
    synth = load(files, monkeypatch, XEON)
    assert synth.path.compile_min_calls == 6 and not compiled
    # 6 steps of which 1 zero-init: 5 calls, not enough; 3 midpoint steps: 6 calls.
    short = f5lite.SamplerOptions(steps=6, cfg_zero_init_steps=1)
    synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, short, seed=0)
    assert not compiled and not synth.path.compile
    synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, f5lite.SamplerOptions(steps=3, method="midpoint"), seed=0)
    assert compiled == [synth.backbone] and synth.path.compile and synth.path.compile_min_calls is None
    synth.synthesize(GEN_TEXT, files["ref"], REF_TEXT, f5lite.SamplerOptions(steps=3, method="midpoint"), seed=0)
    assert len(compiled) == 1  # once
    assert load(files, monkeypatch, XEON, compile=False).path.compile_min_calls is None
    load(files, monkeypatch, AVX2, compile=True)
    assert len(compiled) == 2  # explicit compile at load


# The auto path's output against the fp32 path's, on the same inputs and noise: `SOLVE` of
# tests/sampling/test_sampler.py (64 epsilon of the output's range for an 8-step Euler solve with CFG: each step's backbone
# rounding, a few epsilon of the range, is damped by the steps), in the epsilon of the dtype the auto path picked.
# With fp32 (a CPU without native bf16) that is the fp32 bound, where the two are the same computation; with bf16
# weights it is 64 bf16 epsilon of the range, the rounding bf16 weights and activations carry.
@pytest.mark.usefixtures("keep_threads")
@pytest.mark.parametrize("cpu", [AVX2, XEON], ids=["no-native-bf16", "native-bf16"])
def test_the_auto_path_stays_within_the_fp32_paths_tolerance(files, monkeypatch, cpu):
    reference = load(files, monkeypatch, cpu, dtype="fp32", compile=False)
    chosen = load(files, monkeypatch, cpu, compile=False)
    g = torch.Generator().manual_seed(0)
    cond = torch.randn(1, 40, reference.backbone.mel_dim, generator=g)
    text = reference.encoder.encode([REF_TEXT + GEN_TEXT]).ids
    options = f5lite.SamplerOptions(steps=8)
    expected = f5lite.sample(reference.backbone, cond, text, 80, options, seed=0)
    actual = f5lite.sample(chosen.backbone, cond, text, 80, options, seed=0)
    dtype = torch.bfloat16 if chosen.path.dtype == "bf16" else torch.float32
    assert chosen.path.dtype == ("bf16" if cpu.native_bf16 else "fp32")
    assert_golden(actual, expected.to(dtype), range_ulps=64, what=f"auto path ({chosen.path.dtype}) vs fp32")
    if dtype == torch.float32:
        assert torch.equal(actual, expected)


@pytest.mark.usefixtures("keep_threads")
def test_cli_prints_the_chosen_path_on_stderr(files, monkeypatch, capsys):
    monkeypatch.setattr(auto, "read_cpu_info", lambda: AVX2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    out = files["root"] / "out.wav"
    args = [f"model={files['export']}", f"ref_audio={files['ref']}", f"ref_text={REF_TEXT}", f"text={GEN_TEXT}"]
    args += [f"output={out}", "sample.vocoder=griffin_lim", "device=cpu", "sample.steps=2", "compile=false"]
    assert main(args) == 0
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("f5lite: cpu"))
    assert "AMD EPYC (AVX2, no native bf16): fp32 weights, eager, 2 threads" in line
    assert "CFG as one batch of 2" in line
    assert main([*args, "dtype=bf16", "threads=1"]) == 0
    assert "(AVX2, no native bf16): bf16 weights, eager, 1 thread," in capsys.readouterr().err  # explicit wins

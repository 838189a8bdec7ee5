"""The inference path: which dtype, compile and thread count `f5lite-infer` and the `Synthesizer` run with.

`dtype=auto`, `compile=auto` and `threads=None` (the defaults) are decided here from what the machine has; an
explicit setting always wins. The rules, from side-by-side measurements (docs/benchmarks.md):

- **dtype**: bf16 weights only where the hardware computes bf16 natively: a CPU with AVX-512 BF16 or AMX
  (`avx512_bf16` / `amx_bf16` in `/proc/cpuinfo`) and no `ONEDNN_MAX_CPU_ISA` below it, an ARM CPU with the `bf16`
  feature, or a CUDA device that supports bf16 (`f5lite.models.hardware`, the detector training's
  `perf.precision=auto` shares). Elsewhere bf16 is emulated, slower than fp32 and less exact (measured on an AVX2
  Zen 3), so fp32.
- **compile**: per-block inductor compile (`apply_inference_compile`) costs seconds per new length, which pays back
  only over many backbone calls, and on a CPU without native bf16 it was not shown to pay (fp32 on an AVX2 Zen 3,
  side by side: faster at 7 steps, slower at 32). `auto` compiles where bf16 is native (a CPU with it, or a GPU) once one `synthesize`
  call plans at least `COMPILE_MIN_CALLS` backbone calls (steps x chunks), and on a CPU only with a C++ compiler on
  `PATH` (inductor needs one there).
- **guidance**: classifier-free guidance always runs the conditional and unconditional passes as one batch of two
  (`f5lite.sample`); nothing to choose, but the line says so.
- **threads**: on a CPU, `torch.set_num_threads(physical cores)` (hyper-threads share the vector units a matmul
  saturates) unless `OMP_NUM_THREADS` is set, in which case torch's own choice stands.

`InferPath.describe()` is the one line `f5lite-infer` prints on stderr and the `Synthesizer` logs (and exposes as
`Synthesizer.path`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace

import torch

from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.models.hardware import CpuInfo, native_bf16, read_cpu_info

COMPILE_CHOICES = ("auto", "true", "false")
"""Values of `compile` (the config's spelling; the API also takes True and False)."""
DTYPE_AUTO = "auto"
"""The `dtype` value that lets the machine decide (bf16 where native, else fp32)."""
COMPILE_MIN_CALLS = 200
"""`compile=auto` compiles a `synthesize` call planning at least this many backbone calls (steps x chunks).

An estimate, not a measurement of the break-even: compilation adds 10-20 s to the first call of a length (and
compiles again, dynamically, at the second length), and earlier runs on an AVX512-BF16 CPU measured later calls about
1.3x faster, about 0.1 s per call of the mid-size DiT, so it pays after some 100-200 calls (28 chunks of 7 steps, 6
of 32). On the AVX2 CPU of scripts/results/f5tts_sampling_defaults_cpu.md (fp32) it was inconclusive."""


@dataclass(frozen=True)
class InferPath:
    """How inference runs: device, weights' dtype, compile, threads, and why.

    Attributes:
        device: the device the model is on, e.g. `cpu`, `cuda:0`.
        dtype: the weights' dtype name: `fp32`, `bf16` or `fp16`.
        compile: whether the backbone's blocks are compiled now.
        compile_min_calls: `compile=auto` still to decide: compile at the first `synthesize` call planning at least
            this many backbone calls. None: decided (see `compile`).
        threads: the intra-op threads set on a CPU; None where they were left alone (a GPU, or `OMP_NUM_THREADS`).
        reasons: a short why for each choice made automatically, in the order dtype, compile, threads.
        hardware: the hardware in words, e.g. `AMD EPYC (AVX2, no native bf16)`.
    """

    device: str
    dtype: str
    compile: bool
    compile_min_calls: int | None
    threads: int | None
    reasons: tuple[str, ...]
    hardware: str

    def describe(self) -> str:
        """The one line that says which path was picked, e.g. for stderr."""
        if self.compile:
            compiled = "compiled"
        elif self.compile_min_calls is not None:
            compiled = f"eager (compiles at >= {self.compile_min_calls} backbone calls per text)"
        else:
            compiled = "eager"
        count = self.threads if self.threads is not None else torch.get_num_threads()
        threads = f"{count} thread" + ("" if count == 1 else "s")
        line = (
            f"f5lite: {self.device} {self.hardware}: {self.dtype} weights, {compiled}, {threads}, CFG as one batch of 2"
        )
        return line + (f" ({'; '.join(self.reasons)})" if self.reasons else "")

    def compiled(self) -> InferPath:
        """This path once the backbone has been compiled."""
        return replace(self, compile=True, compile_min_calls=None)


def check_compile_setting(value: bool | str) -> str:
    """Normalize `compile` to `auto`, `true` or `false` (Hydra turns `compile=true` into `True` or `'True'`).

    Raises:
        ValueError: any other value (one line naming the key).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    spelled = str(value).lower()
    if spelled not in COMPILE_CHOICES:
        raise ValueError(f"compile={value!r} is not valid; choose one of: {', '.join(COMPILE_CHOICES)}")
    return spelled


def choose_path(
    device: torch.device,
    dtype: str = DTYPE_AUTO,
    compile: bool | str = "auto",
    threads: int | None = None,
    *,
    cpu: CpuInfo | None = None,
    cuda_bf16: bool | None = None,
    environ: Mapping[str, str] | None = None,
    compiler: bool | None = None,
) -> InferPath:
    """Decide the inference path for `device`; explicit settings win over the automatic choice.

    Args:
        device: the resolved device.
        dtype: `auto`, or an explicit `fp32`, `bf16`, `fp16`.
        compile: `auto`, or explicit `true`/`false` (or a bool).
        threads: explicit intra-op threads for a CPU; None decides (physical cores unless `OMP_NUM_THREADS`).
        cpu: the CPU's description (default `read_cpu_info()`); tests pass a fake.
        cuda_bf16: whether the CUDA device supports bf16 (default: ask torch).
        environ: the environment (default `os.environ`).
        compiler: whether a C++ compiler is available for inductor (default: `c++`, `g++` or `clang++` on PATH).

    Returns:
        The path. Nothing is applied here (see `apply_threads`).

    Raises:
        ValueError: a bad `dtype`, `compile` or `threads` (one line naming the key).
    """
    if dtype != DTYPE_AUTO and dtype not in WEIGHT_DTYPES:
        raise ValueError(f"dtype={dtype!r} is not valid; choose one of: auto, {', '.join(WEIGHT_DTYPES)}")
    compile_setting = check_compile_setting(compile)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads={threads!r} is not valid; give a number of threads >= 1, or leave it unset")
    environ = os.environ if environ is None else environ
    reasons: list[str] = []
    on_cpu = device.type == "cpu"
    if on_cpu:
        cpu = cpu or read_cpu_info()
    native, hardware = native_bf16(device, cpu, cuda_bf16)
    if dtype == DTYPE_AUTO:
        dtype = "bf16" if native else "fp32"
        reasons.append("bf16: native bf16" if native else "fp32: bf16 would be emulated")
    min_calls: int | None = None
    if compile_setting == "auto":
        has_compiler = compiler if compiler is not None else _has_compiler()
        if on_cpu and not native:
            reasons.append("no compile: not shown to pay on a CPU without native bf16")
        elif on_cpu and not has_compiler:
            reasons.append("no compile: no C++ compiler for inductor")
        else:
            min_calls = COMPILE_MIN_CALLS
    chosen_threads = threads
    if cpu is not None and threads is None:
        if environ.get("OMP_NUM_THREADS"):
            reasons.append("threads: OMP_NUM_THREADS is set")
        else:
            chosen_threads = cpu.physical_cores
            reasons.append("threads: physical cores")
    return InferPath(
        device=str(device),
        dtype=dtype,
        compile=compile_setting == "true",
        compile_min_calls=min_calls,
        threads=chosen_threads,
        reasons=tuple(reasons),
        hardware=hardware,
    )


def apply_threads(path: InferPath) -> None:
    """Set torch's intra-op threads to `path.threads` (a CPU path; None leaves them alone)."""
    if path.threads is not None and torch.get_num_threads() != path.threads:
        torch.set_num_threads(path.threads)


def _has_compiler() -> bool:
    return any(shutil.which(name) for name in ("c++", "g++", "clang++"))

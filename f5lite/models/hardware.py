"""What this machine computes natively: the CPU's description, and whether bf16 runs natively on a device.

One detector for every automatic bf16 choice: inference's `dtype=auto` (`f5lite.infer.auto`) and training's
`perf.precision=auto` (`f5lite.train.trainer`). bf16 is native on a CPU with AVX-512 BF16 or AMX (`avx512_bf16` /
`amx_bf16` in `/proc/cpuinfo`'s `flags`), on an ARM CPU with the `bf16` feature, and on a CUDA device that supports
it. Elsewhere a CPU emulates bf16, which is slower than fp32 and less exact: on an AVX2 AMD EPYC one `speak_cpu`
update took 53 s in bf16 against 5 s in fp32 (issue 54).

A CPU that has the flags still computes bf16 the emulated way when the environment keeps oneDNN, which runs torch's
bf16 matmuls on a CPU, below AVX-512 BF16 (`ONEDNN_MAX_CPU_ISA=AVX2`, or `DNNL_MAX_CPU_ISA`, its older name): on an
AVX-512 BF16 EPYC a `speak_cpu` update in bf16 then took 28.9 CPU seconds against 1.7 without the cap
(docs/guides/speaks.md). `ATEN_CPU_CAPABILITY=avx2` alone changes torch's element-wise kernels, not the matmuls, and
cost bf16 nothing there (1.67 s), so it does not count.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
"""CPU flags of native bf16 arithmetic: x86 AVX-512 BF16 and AMX (`flags`), ARMv8.6 BF16 (`Features`)."""
ONEDNN_ISA_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
"""The environment variables that cap the instruction set oneDNN uses (the first one set wins, as in oneDNN)."""
ISAS_WITHOUT_BF16 = frozenset(
    {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI", "AVX512_MIC"}
)
"""oneDNN's instruction sets (`ONEDNN_MAX_CPU_ISA` values) below AVX-512 BF16: capped at one, bf16 is emulated."""
CPUINFO = Path("/proc/cpuinfo")
"""Where Linux describes the CPU (`read_cpu_info` reads it; elsewhere it is missing and the fallbacks apply)."""


@dataclass(frozen=True)
class CpuInfo:
    """What the CPU offers.

    Attributes:
        model: the CPU's model name (`/proc/cpuinfo`'s `model name`, else `platform.processor()`).
        flags: its feature flags (`flags` on x86, `Features` on ARM; empty where unknown).
        capability: the kernel set torch picked (`torch.backends.cpu.get_cpu_capability()`, e.g. `AVX2`).
        physical_cores: cores this process may run on, hyper-threads not counted.
        kernel_limit: the environment setting that keeps the kernels below native bf16 (e.g.
            `ONEDNN_MAX_CPU_ISA=AVX2`), or empty where none does.
    """

    model: str
    flags: frozenset[str]
    capability: str
    physical_cores: int
    kernel_limit: str = ""

    @property
    def native_bf16(self) -> bool:
        """Whether this process computes bf16 natively (AVX-512 BF16, AMX or ARM BF16, and no `kernel_limit`)."""
        return bool(self.flags & NATIVE_BF16_FLAGS) and not self.kernel_limit

    @property
    def bf16_why(self) -> str:
        """What makes bf16 native here or not, in a few words: the flags, the cap on oneDNN, or the flags missing."""
        if self.native_bf16:
            return ", ".join(sorted(self.flags & NATIVE_BF16_FLAGS))
        if self.flags & NATIVE_BF16_FLAGS:
            return f"{self.kernel_limit} keeps oneDNN below AVX-512 BF16"
        return "no avx512_bf16, amx_bf16 or ARM bf16 flag"


def onednn_limit(environ: Mapping[str, str] | None = None) -> str:
    """The oneDNN instruction-set cap that rules out native bf16, as `NAME=value`, or empty where there is none.

    Args:
        environ: the environment (default `os.environ`).
    """
    environ = os.environ if environ is None else environ
    for name in ONEDNN_ISA_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return f"{name}={value}" if value.upper() in ISAS_WITHOUT_BF16 else ""
    return ""


def read_cpu_info(
    cpuinfo: str | None = None, allowed: set[int] | None = None, environ: Mapping[str, str] | None = None
) -> CpuInfo:
    """Read the CPU's model, flags and physical cores (from `/proc/cpuinfo` on Linux; a fallback elsewhere).

    Args:
        cpuinfo: the text of `/proc/cpuinfo` (default: read `CPUINFO`, if there is one).
        allowed: the logical CPUs this process may use (default: its affinity, else all).
        environ: the environment, for a cap on oneDNN's instruction set (default `os.environ`).

    Returns:
        The CPU's description.
    """
    if cpuinfo is None:
        cpuinfo = CPUINFO.read_text(errors="replace") if CPUINFO.is_file() else ""
    if allowed is None:
        allowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    model, flags, cores = "", set[str](), set[tuple[str, str]]()
    logical = 0
    for block in cpuinfo.strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if "processor" not in fields:
            continue
        model = model or fields.get("model name", "")
        flags |= set(fields.get("flags", fields.get("Features", "")).split())
        if fields["processor"].isdigit() and int(fields["processor"]) not in allowed:
            continue
        logical += 1
        cores.add((fields.get("physical id", "0"), fields.get("core id", fields["processor"])))
    physical = len(cores) if cores else len(allowed)
    return CpuInfo(
        model=model or platform.processor() or platform.machine() or "unknown CPU",
        flags=frozenset(flags),
        capability=torch.backends.cpu.get_cpu_capability(),
        physical_cores=max(1, min(physical, logical or physical)),
        kernel_limit=onednn_limit(environ),
    )


def native_bf16(device: torch.device, cpu: CpuInfo | None = None, cuda_bf16: bool | None = None) -> tuple[bool, str]:
    """Whether `device` computes bf16 natively, and the hardware in words.

    Args:
        device: a CPU or CUDA device.
        cpu: the CPU's description for a CPU device (default `read_cpu_info()`).
        cuda_bf16: whether the CUDA device supports bf16 (default: ask torch).

    Returns:
        `(native, hardware)`, e.g. `(False, "AMD EPYC (AVX2, no native bf16)")`; a GPU's words are
        `(native bf16)` or `(no bf16)`.
    """
    if device.type == "cpu":
        cpu = cpu or read_cpu_info()
        native = cpu.native_bf16
        return native, f"{cpu.model} ({cpu.capability}, {'native' if native else 'no native'} bf16)"
    native = torch.cuda.is_bf16_supported() if cuda_bf16 is None else cuda_bf16
    return native, f"({'native' if native else 'no'} bf16)"

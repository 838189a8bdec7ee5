"""`perf.precision` resolved for the device a run trains on: `auto` is bf16 only where the device computes it natively.

The detector is inference's (`f5lite.models.hardware`): a CPU with AVX-512 BF16 or AMX (and no `ONEDNN_MAX_CPU_ISA`
below it), an ARM CPU with BF16, a CUDA GPU that supports bf16. Elsewhere bf16 is emulated, 5 to 10x slower than
fp32 per update (docs/guides/speaks.md), so `auto` is fp32 (`no`) there, and an explicit `bf16` runs with a warning
line. The trainer (`make_accelerator`) resolves it once per run and logs the choice (`announce_precision`) once the
launch goes ahead; the benchmarks resolve it the same way.
"""

from __future__ import annotations

import dataclasses

import torch

from f5lite.config.perf import PRECISION_AUTO
from f5lite.models.hardware import CpuInfo, native_bf16, read_cpu_info

EMULATED_BF16_COST = "5 to 10x slower than fp32"
"""What bf16 costs per training update on a CPU that emulates it: 9.7x fp32 for `speak_cpu`'s model and 5.5x for
`demo`'s, measured on an AVX-512 BF16 EPYC with its kernels held to AVX2 (docs/guides/speaks.md)."""


@dataclasses.dataclass(frozen=True)
class PrecisionChoice:
    """`perf.precision` resolved for a device: what accelerate runs, and the line that says why.

    Attributes:
        precision: accelerate's mixed-precision name: `no`, `bf16` or `fp16`.
        line: the one line to log, or empty (an explicit setting that runs as set, natively).
        warning: whether `line` is a warning (an explicit bf16 that this CPU emulates).
    """

    precision: str
    line: str = ""
    warning: bool = False


def choose_precision(
    setting: str, device: torch.device, *, cpu: CpuInfo | None = None, cuda_bf16: bool | None = None
) -> PrecisionChoice:
    """Resolve `perf.precision` for `device`: `auto` is bf16 where the device computes it natively, else `no`.

    The bf16 detector is inference's (`f5lite.models.hardware`): a CPU with AVX-512 BF16 or AMX (and no
    `ONEDNN_MAX_CPU_ISA` below it), an ARM CPU with BF16, a CUDA GPU that supports bf16. An explicit value is
    kept; an explicit `bf16` on a CPU that emulates it comes with a warning line.

    Args:
        setting: `perf.precision` as configured.
        device: the device training runs on.
        cpu: the CPU's description (default `read_cpu_info()`); tests pass a fake.
        cuda_bf16: whether the CUDA device supports bf16 (default: ask torch).

    Returns:
        The precision accelerate gets, and the line to log.
    """
    if setting != PRECISION_AUTO and (setting != "bf16" or device.type != "cpu"):
        return PrecisionChoice(setting)
    if device.type == "cpu":
        cpu = cpu or read_cpu_info()
    native, _ = native_bf16(device, cpu, cuda_bf16)
    if setting == "bf16":
        if native or cpu is None:
            return PrecisionChoice("bf16")
        line = (
            f"perf.precision=bf16 on a CPU without native bf16 ({cpu.model}: {cpu.bf16_why}): bf16 is emulated, "
            f"{EMULATED_BF16_COST} here; use perf.precision=auto or no"
        )
        return PrecisionChoice("bf16", line, warning=True)
    chosen = "bf16" if native else "no"
    if cpu is None:
        why = "the GPU supports bf16" if native else "the GPU does not support bf16"
    elif native:
        why = f"{cpu.model} has native bf16 ({cpu.bf16_why})"
    else:
        why = f"{cpu.model} has no native bf16 ({cpu.bf16_why}): bf16 would be emulated, {EMULATED_BF16_COST}"
    return PrecisionChoice(chosen, f"perf.precision=auto -> {chosen}{'' if native else ' (fp32)'}, since {why}")

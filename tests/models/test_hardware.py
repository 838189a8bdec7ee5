"""The one native-bf16 detector (`f5lite.models.hardware`) that inference's `dtype=auto` and training's
`perf.precision=auto` share: the CPU's flags, and a cap on oneDNN's instruction set that makes the flags moot."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import f5lite.infer.auto as auto
import f5lite.models.hardware as hardware
from f5lite.models.hardware import native_bf16, read_cpu_info

CPU = torch.device("cpu")
XEON = "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: fpu avx2 avx512f avx512_bf16\ncore id\t\t: 0\n"


@pytest.mark.parametrize(
    ("environ", "native"),
    [
        ({}, True),
        ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, False),  # an AVX2-only CPU's kernels, emulated on this one
        ({"ONEDNN_MAX_CPU_ISA": "avx512_core"}, False),  # AVX-512 without its BF16 instructions
        ({"DNNL_MAX_CPU_ISA": "AVX2"}, False),  # oneDNN's older name
        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, True),
        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, True),
        ({"ONEDNN_MAX_CPU_ISA": "ALL"}, True),
        ({"ATEN_CPU_CAPABILITY": "avx2"}, True),  # torch's element-wise kernels only: the matmuls stay native
    ],
)
def test_a_cap_on_onednn_below_avx512_bf16_makes_bf16_emulated(environ: dict[str, str], native: bool) -> None:
    cpu = read_cpu_info(XEON, allowed={0}, environ=environ)
    assert cpu.native_bf16 == native
    assert native_bf16(CPU, cpu) == (
        native,
        f"Intel Xeon ({cpu.capability}, {'native' if native else 'no native'} bf16)",
    )
    cap = next(iter(environ.items()), ("", ""))
    assert (f"{cap[0]}={cap[1]} keeps oneDNN below AVX-512 BF16" in cpu.bf16_why) == (not native)


def test_without_the_flags_no_cap_matters() -> None:
    cpu = read_cpu_info(XEON.replace(" avx512_bf16", ""), allowed={0}, environ={"ONEDNN_MAX_CPU_ISA": "ALL"})
    assert not cpu.native_bf16 and cpu.bf16_why == "no avx512_bf16, amx_bf16 or ARM bf16 flag"


def test_read_cpu_info_reads_the_file_the_module_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "cpuinfo"
    fake.write_text(XEON)
    monkeypatch.setattr(hardware, "CPUINFO", fake)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    assert read_cpu_info(allowed={0}).native_bf16 and read_cpu_info(allowed={0}).model == "Intel Xeon"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert not read_cpu_info(allowed={0}).native_bf16


def test_inference_asks_the_same_detector() -> None:
    assert auto.CpuInfo is hardware.CpuInfo and auto.read_cpu_info is hardware.read_cpu_info
    capped = read_cpu_info(XEON, allowed={0}, environ={"ONEDNN_MAX_CPU_ISA": "AVX2"})
    path = auto.choose_path(CPU, cpu=capped, environ={}, compiler=True)
    assert path.dtype == "fp32" and "no native bf16" in path.describe()
    assert auto.choose_path(CPU, cpu=read_cpu_info(XEON, allowed={0}, environ={}), environ={}).dtype == "bf16"
    assert native_bf16(torch.device("cuda", 0), cuda_bf16=True) == (True, "(native bf16)")

"""`perf.precision=auto` (issue 54): bf16 only where the device computes it natively, resolved once when the trainer
starts, logged in one line and recorded in the run directory; an explicit bf16 that a CPU emulates runs with one
warning line; the CPU recipes leave the choice to the machine; a bad value is refused naming the key.

The CPU is faked where the detector reads it (`/proc/cpuinfo`'s flags, the oneDNN cap in the environment), so the
same answers come on every machine."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from support.trainer_helpers import make, overrides

import f5lite.models.hardware as hardware
import f5lite.train.trainer as trainer_module
from f5lite.config import PerfConfig, TrainConfig, compose_config
from f5lite.storage.rundir import load_run_config
from f5lite.train.objective import Prepared, prepare_objective
from f5lite.train.precision import choose_precision
from f5lite.train.trainer import announce_precision, make_accelerator

CPU = torch.device("cpu")
CUDA = torch.device("cuda", 0)
TRAINER_LOG = "f5lite.train.trainer"
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
FakeCpu = Callable[[str], None]


@pytest.fixture
def fake_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCpu:
    """`fake_cpu("avx2 avx512_bf16")`: the detector reads a two-core CPU with these flags, and no oneDNN cap."""
    for name in (*hardware.ONEDNN_ISA_VARIABLES, "ATEN_CPU_CAPABILITY"):
        monkeypatch.delenv(name, raising=False)

    def fake(flags: str) -> None:
        text = "\n\n".join(
            f"processor\t: {i}\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 {flags}\ncore id\t\t: {i}" for i in range(2)
        )
        path = tmp_path / f"cpuinfo-{len(list(tmp_path.glob('cpuinfo-*')))}"
        path.write_text(text + "\n")
        monkeypatch.setattr(hardware, "CPUINFO", path)

    return fake


def precision_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == TRAINER_LOG and "perf.precision" in r.getMessage()]


@pytest.mark.parametrize(
    ("flags", "chosen"),
    [("avx2 avx512f avx512_bf16", "bf16"), ("avx2 avx512f amx_tile amx_bf16", "bf16"), ("avx2 avx512f", "no")],
)
def test_auto_is_bf16_only_where_the_cpu_reports_native_bf16(fake_cpu: FakeCpu, flags: str, chosen: str) -> None:
    fake_cpu(flags)
    choice = choose_precision("auto", CPU)
    assert choice.precision == chosen and not choice.warning
    assert choice.line.startswith(f"perf.precision=auto -> {chosen}") and "Test CPU" in choice.line
    assert ("emulated" in choice.line) == (chosen == "no")  # the why


def test_auto_is_fp32_where_onednn_is_kept_below_avx512_bf16(
    fake_cpu: FakeCpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cpu("avx2 avx512f avx512_bf16")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # what emulates an AVX2-only CPU on this one
    choice = choose_precision("auto", CPU)
    assert choice.precision == "no" and "ONEDNN_MAX_CPU_ISA=AVX2" in choice.line
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core_bf16")  # a cap that keeps bf16 native
    assert choose_precision("auto", CPU).precision == "bf16"


@pytest.mark.parametrize("supported", [True, False])
def test_auto_on_cuda_follows_the_gpu(monkeypatch: pytest.MonkeyPatch, supported: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: supported)
    choice = choose_precision("auto", CUDA)
    assert choice.precision == ("bf16" if supported else "no") and not choice.warning
    assert choice.line.startswith("perf.precision=auto -> ")


@pytest.mark.parametrize("setting", ["no", "bf16", "fp16"])
def test_an_explicit_precision_is_kept_and_said_only_when_emulated(fake_cpu: FakeCpu, setting: str) -> None:
    fake_cpu("avx2 avx512_bf16")
    assert choose_precision(setting, CPU) == choose_precision(setting, CUDA, cuda_bf16=False)
    assert choose_precision(setting, CPU).precision == setting and not choose_precision(setting, CPU).line
    fake_cpu("avx2")
    assert choose_precision(setting, CPU).precision == setting
    assert choose_precision(setting, CPU).warning == (setting == "bf16")


def test_explicit_bf16_on_an_emulating_cpu_warns_in_one_line(
    fake_cpu: FakeCpu, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_cpu("avx avx2 fma")
    with caplog.at_level(logging.INFO, logger=TRAINER_LOG):
        accelerator, choice = make_accelerator(compose_config(overrides(tmp_path / "run", "perf.precision=bf16")).perf)
        announce_precision(choice)
    assert accelerator.mixed_precision == "bf16"  # as set: the warning does not overrule the user
    (line,) = precision_lines(caplog)
    message = line.getMessage()
    assert line.levelno == logging.WARNING and "\n" not in message
    assert message.startswith(
        "perf.precision=bf16 on a CPU without native bf16 (Test CPU: no avx512_bf16, amx_bf16 or ARM bf16 flag)"
    )
    assert "bf16 is emulated" in message and "slower than fp32" in message
    assert message.endswith("use perf.precision=auto or no")


@pytest.mark.parametrize(
    ("flags", "chosen", "dtype"), [("avx512_bf16", "bf16", torch.bfloat16), ("avx2", "no", torch.float32)]
)
def test_the_trainer_resolves_auto_once_logs_it_and_records_it(
    fake_cpu: FakeCpu,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    flags: str,
    chosen: str,
    dtype: torch.dtype,
) -> None:
    fake_cpu(flags)
    prepared: list[str] = []  # the precision the objective's `Prepare` is handed

    def spy(cfg: TrainConfig) -> Prepared:
        prepared.append(cfg.perf.precision)
        return prepare_objective(cfg)

    monkeypatch.setattr(trainer_module, "prepare_objective", spy)
    with caplog.at_level(logging.INFO):
        trainer = make(tmp_path, "perf.precision=auto")
    (line,) = precision_lines(caplog)  # once
    assert line.levelno == logging.INFO and line.getMessage().startswith(f"perf.precision=auto -> {chosen}")
    assert trainer.acc.mixed_precision == chosen
    assert trainer.perf.precision == chosen and trainer._attention_dtype() == dtype  # nothing reads `auto`
    assert prepared == [chosen]  # nor the objective
    assert load_run_config(tmp_path / "run").perf.precision == chosen  # the run directory says what ran


@pytest.mark.parametrize("recipe", ["speak_cpu", "speak_cpu_char", "grpo"])
def test_the_cpu_recipes_leave_the_precision_to_the_machine(recipe: str) -> None:
    assert compose_config([f"+recipe={recipe}"]).perf.precision == "auto"


@pytest.mark.parametrize("recipe", sorted(path.stem for path in RECIPES.glob("*.yaml")))
def test_no_recipe_ships_a_bf16_that_a_cpu_would_emulate(recipe: str) -> None:
    assert compose_config([f"+recipe={recipe}"]).perf.precision in ("auto", "no")


def test_auto_is_the_default_and_a_gpu_recipe_keeps_it() -> None:
    assert PerfConfig().precision == "auto"
    assert compose_config(["+recipe=dit_base"]).perf.precision == "auto"  # bf16 on every GPU that computes it


def test_a_bad_precision_is_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"^perf\.precision='bf32' is not valid; choose one of: auto, no, bf16, fp16$"):
        compose_config(["+recipe=speak_cpu", "perf.precision=bf32"])


def test_fp8_takes_auto_and_is_checked_again_once_it_is_resolved() -> None:
    perf = PerfConfig(fp8=True, precision="auto")  # bf16 on every GPU that runs FP8
    with pytest.raises(ValueError, match=r"perf\.fp8=true needs perf\.precision=bf16 .*, not no$"):
        dataclasses.replace(perf, precision="no")  # what the trainer does with the resolved value

"""FP8 training (perf.fp8): refused in one line where it cannot run, converts the blocks' aligned Linears only, keeps
keys, dtypes and the EMA, meets `torch._scaled_mm`'s shape rules for any batch, and trains like bf16 (emulated)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from support.tiny_models import tiny_backbone, tiny_batch
from torch import nn

import f5lite.train.setup as train_setup
from f5lite.config import compose_config
from f5lite.models import apply_compile, apply_fp8, check_fp8
from f5lite.models.cfm import CFM
from f5lite.models.fp8 import fp8_linears
from f5lite.train.setup import build_model

torchao = pytest.importorskip("torchao")
from torchao.float8.float8_linear import Float8Linear  # noqa: E402

TINY = [f"model.{k}={v}" for k, v in {"dim": 64, "depth": 2, "heads": 4, "dim_head": 16, "ff_mult": 2}.items()]
FP8 = ["+recipe=debug_tiny", *TINY, "perf.fp8=true", "perf.precision=bf16"]
ON_CPU = (
    "perf.fp8=true needs a CUDA GPU with FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, "
    "Blackwell); this run is on cpu"
)


def pretend_gpu(monkeypatch: pytest.MonkeyPatch, name: str, capability: tuple[int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


# ------------------------------------------------------------------------------------------------------ refusals


def test_refused_on_a_cpu_in_one_line_before_the_model_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as info:
        check_fp8(torch.device("cpu"))
    assert str(info.value) == ON_CPU

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the backbone was built before the refusal")

    monkeypatch.setattr(train_setup, "build_backbone_from_config", never)
    with pytest.raises(ValueError) as info:
        build_model(compose_config(FP8), 10, None, torch.device("cpu"))
    assert str(info.value) == ON_CPU


def test_the_training_command_refuses_in_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "f5lite.train", *FP8, f"run_dir={run}"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"f5lite-train: {ON_CPU}\n"
    assert not run.exists() or not any(run.iterdir())  # the lock taken and given back, nothing written


@pytest.mark.parametrize("precision", ["no", "fp16"])
def test_precision_other_than_bf16_is_refused_with_the_config(precision: str) -> None:
    with pytest.raises(ValueError, match=rf"^perf\.fp8=true needs perf\.precision=bf16 .*, not {precision}$") as info:
        compose_config([*FP8, f"perf.precision={precision}"])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "capability"), [("NVIDIA A100-SXM4-80GB", (8, 0)), ("NVIDIA GeForce RTX 3090", (8, 6))]
)
def test_gpus_without_fp8_tensor_cores_are_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, capability: tuple[int, int]
) -> None:
    pretend_gpu(monkeypatch, name, capability)
    with pytest.raises(ValueError) as info:
        check_fp8(torch.device("cuda"))
    major, minor = capability
    assert str(info.value) == (
        "perf.fp8=true needs a CUDA GPU with FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, "
        f"Blackwell); {name} has compute capability {major}.{minor}"
    )


@pytest.mark.parametrize(("name", "capability"), [("NVIDIA L4", (8, 9)), ("NVIDIA H100 80GB HBM3", (9, 0))])
def test_ada_and_hopper_pass(monkeypatch: pytest.MonkeyPatch, name: str, capability: tuple[int, int]) -> None:
    pretend_gpu(monkeypatch, name, capability)
    check_fp8(torch.device("cuda"))


def test_rocm_gpus_are_refused_whatever_their_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_gpu(monkeypatch, "AMD Instinct MI250X", (9, 0))
    monkeypatch.setattr(torch.version, "hip", "6.2.0")
    with pytest.raises(ValueError, match=r"this is a ROCm GPU \(AMD Instinct MI250X\), not supported$"):
        check_fp8(torch.device("cuda"))


def test_missing_torchao_is_refused_with_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", (9, 0))
    monkeypatch.setitem(sys.modules, "torchao", None)  # what `import torchao` and find_spec see when it is missing
    missing = r"^perf\.fp8=true needs torchao: pip install 'f5lite\[fp8\]'$"
    with pytest.raises(ValueError, match=missing):
        check_fp8(torch.device("cuda"))
    with pytest.raises(ValueError, match=missing):
        apply_fp8(tiny_backbone("dit"))


# ------------------------------------------------------------------------------------------- what is converted


def converted(model: nn.Module) -> list[str]:
    return [name for name, m in model.named_modules() if isinstance(m, Float8Linear)]


def test_only_the_blocks_aligned_token_linears_are_converted() -> None:
    # ff_mult 1.125: a feed-forward 64 -> 72 -> 64, whose 72 `torch._scaled_mm` cannot take.
    model = tiny_backbone("dit", ff_mult=1.125, depth=2)
    plain = tiny_backbone("dit", ff_mult=1.125, depth=2)
    params = dict(model.named_parameters())
    names = apply_fp8(model, emulate=True)
    expected = [f"transformer_blocks.{i}.attn.{p}" for i in range(2) for p in ("to_q", "to_k", "to_v", "to_out.0")]
    assert names == expected
    assert converted(model) == expected
    # Not converted: the AdaLN modulations (one row per sample), the unaligned feed-forward, everything outside.
    linears = [n for n, m in model.named_modules() if type(m) is nn.Linear]
    assert "transformer_blocks.0.attn_norm.linear" in linears and "transformer_blocks.1.ff.ff.2" in linears
    assert {"time_embed.time_mlp.0", "input_embed.proj", "norm_out.linear", "proj_out"} <= set(linears)
    # The same parameters (objects, dtypes), the same keys in the same order.
    assert all(params[n] is p for n, p in model.named_parameters())
    assert list(model.state_dict()) == list(plain.state_dict())
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert apply_fp8(model, emulate=True) == []  # applied twice, nothing more to convert


@pytest.mark.parametrize(
    ("name", "per_block"),
    [
        ("dit", ["attn.to_q", "attn.to_k", "attn.to_v", "attn.to_out.0", "ff.ff.0.0", "ff.ff.2"]),
        ("mmdit", ["attn.to_q", "attn.to_k", "attn.to_v", "attn.to_q_c", "attn.to_k_c", "attn.to_v_c"]),
        ("unett", ["2.to_q", "2.to_k", "2.to_v", "2.to_out.0", "4.ff.0.0", "4.ff.2"]),
    ],
)
def test_every_family_converts_its_attention_and_feed_forward(name: str, per_block: list[str]) -> None:
    model = tiny_backbone(name)
    keys = list(model.state_dict())
    names = fp8_linears(model)
    for i in range(len(model.blocks)):
        prefix = f"{'layers' if name == 'unett' else 'transformer_blocks'}.{i}."
        assert set(per_block) <= {n.removeprefix(prefix) for n in names if n.startswith(prefix)}
    assert not [n for n in names if "norm" in n]
    assert apply_fp8(model, emulate=True) == names == converted(model)
    assert list(model.state_dict()) == keys


# -------------------------------------------------------------------------------------------------- numbers


def test_matmuls_meet_the_gpu_shape_rules_for_any_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA's `torch._scaled_mm` takes matrices whose trailing sizes (both of the second's) are multiples of 16; the
    CPU's does not check. In the weight gradient the inner size is the token count, 3 x 41 here (3 x 42 for UNetT,
    whose time token joins the frames): the layers must pad it."""
    real = torch._scaled_mm
    calls = []

    def cuda_rules(a: torch.Tensor, b: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        assert a.shape[1] % 16 == 0 and b.shape[0] % 16 == 0 and b.shape[1] % 16 == 0, (a.shape, b.shape)
        calls.append((a.shape, b.shape))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(torch, "_scaled_mm", cuda_rules)
    for name in ("dit", "unett"):
        model = tiny_backbone(name)
        apply_fp8(model)  # the real FP8 matmul, which the CPU has too
        batch = tiny_batch(b=3, n=41)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"])
        out.float().pow(2).mean().backward()
    # Each converted layer: forward, input gradient, weight gradient.
    assert len(calls) == 3 * (len(fp8_linears(tiny_backbone("dit"))) + len(fp8_linears(tiny_backbone("unett"))))


def train(model: nn.Module, steps: int = 4) -> list[float]:
    """Losses of `steps` AdamW updates of the flow objective on one fixed batch, under bf16 autocast."""
    g = torch.Generator().manual_seed(0)
    mel, text = torch.randn(4, 64, 100, generator=g), torch.randint(0, 40, (4, 20), generator=g)
    lens = torch.tensor([64, 60, 50, 41])
    cfm = CFM(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = cfm(mel, text, lens, generator=torch.Generator().manual_seed(step))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_emulated_fp8_training_follows_the_bf16_run_and_its_checkpoint_loads_into_a_plain_model(
    tmp_path: Path,
) -> None:
    bf16 = train(tiny_backbone("dit", depth=2))
    model = tiny_backbone("dit", depth=2)
    apply_fp8(model, emulate=True)
    fp8 = train(model)
    assert fp8 != bf16  # the FP8 matmuls ran
    # e4m3 keeps 3 mantissa bits: each value it rounds moves by at most 2^-4 of itself (bf16: 2^-8). The loss is a
    # mean over thousands of outputs whose rounding errors have either sign, so it moves by less than that bound;
    # a wrong scale or a lost gradient moves it by far more.
    e4m3_rounding = 2.0**-4
    for step, (a, b) in enumerate(zip(fp8, bf16, strict=True)):
        assert abs(a - b) <= e4m3_rounding * b, (step, a, b)
    assert fp8[-1] < fp8[0]  # and it learns

    save_file(model.state_dict(), tmp_path / "fp8.safetensors")
    saved = load_file(tmp_path / "fp8.safetensors")
    plain = tiny_backbone("dit", seed=1, depth=2)
    plain.load_state_dict(saved, strict=True)
    assert list(plain.state_dict()) == list(model.state_dict())
    assert {k: v.dtype for k, v in plain.state_dict().items()} == {k: v.dtype for k, v in saved.items()}
    assert {v.dtype for v in saved.values()} == {torch.float32}
    for key, value in plain.state_dict().items():
        torch.testing.assert_close(value, model.state_dict()[key], rtol=0, atol=0, msg=key)


def test_the_training_setup_converts_the_blocks_and_the_ema_stays_fp32(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `build_model` (the device check passed, as on an H100): the blocks convert, the EMA stays plain fp32."""
    checked = []
    monkeypatch.setattr(train_setup, "check_fp8", checked.append)
    cfg = compose_config(FP8)
    setup = build_model(cfg, 10, None, torch.device("cpu"))
    assert checked == [torch.device("cpu")]
    plain = build_model(compose_config([*FP8[:-2], "perf.precision=bf16"]), 10, None, torch.device("cpu"))
    assert converted(setup.backbone) == fp8_linears(plain.backbone) != []
    assert converted(plain.backbone) == []
    assert list(setup.backbone.state_dict()) == list(plain.backbone.state_dict())

    assert setup.ema is not None
    assert list(setup.ema.state_dict()) == list(setup.backbone.state_dict())
    model = CFM(setup.backbone)
    g = torch.Generator().manual_seed(0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mel, text = torch.randn(2, 40, 100, generator=g), torch.randint(0, 10, (2, 12), generator=g)
        loss = model(mel, text, torch.tensor([40, 33]), generator=g)
    loss.backward()
    setup.ema.update(setup.backbone)
    assert {v.dtype for v in setup.ema.state_dict().values()} == {torch.float32}
    assert {p.dtype for p in setup.backbone.parameters()} == {torch.float32}


def test_converted_blocks_compile_in_one_graph_each_and_match_eager() -> None:
    """torchao's casts and matmuls trace without a graph break (`fullgraph=True`), the per-step modules too."""
    torch._dynamo.reset()
    eager, compiled = tiny_backbone("dit"), tiny_backbone("dit")
    apply_fp8(eager)
    apply_fp8(compiled)
    apply_compile(compiled, backend="aot_eager", scope="model")
    batch = tiny_batch(b=3, n=41)
    outs = []
    for model in (compiled, eager):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"])
        out.float().pow(2).mean().backward()
        outs.append((out, [p.grad for p in model.parameters()]))
    torch._dynamo.reset()
    (out_c, grads_c), (out_e, grads_e) = outs
    # aot_eager runs eager's kernels; where it orders a reduction otherwise, results differ by a bf16 rounding.
    tol = torch.finfo(torch.bfloat16).eps
    torch.testing.assert_close(out_c, out_e, rtol=tol, atol=tol)
    for gc, ge in zip(grads_c, grads_e, strict=True):
        torch.testing.assert_close(gc, ge, rtol=tol, atol=tol)

"""Per-block torch.compile: full graphs that match eager, no recompiles for seen shapes, clean keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch._functorch.config as functorch_config
from support.tiny_models import tiny_backbone, tiny_batch
from torch._dynamo.testing import CompileCounterWithBackend
from torch.utils.flop_counter import FlopCounterMode

import f5lite
import f5lite.train.setup as train_setup
from f5lite.config import compose_config
from f5lite.models.compile import per_step_modules
from f5lite.models.distill import StudentBackbone


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    """Compiled graphs and the memory budget are process-wide: start and end every test clean."""
    budget = functorch_config.activation_memory_budget
    torch._dynamo.reset()
    yield
    functorch_config.activation_memory_budget = budget
    torch._dynamo.reset()


def forward_backward(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad()
    out = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"])
    out.pow(2).mean().backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("name", ["dit", "mmdit", "unett"])
def test_compiled_blocks_match_eager_without_recompiles(name: str) -> None:
    eager, compiled = tiny_backbone(name), tiny_backbone(name)
    counter = CompileCounterWithBackend("aot_eager")
    f5lite.apply_compile(compiled, backend=counter, fullgraph=True)
    assert all("_orig_mod" not in key for key in compiled.state_dict())
    assert list(compiled.state_dict()) == list(eager.state_dict())

    out_c, grads_c = forward_backward(compiled, tiny_batch(seed=1))
    out_e, grads_e = forward_backward(eager, tiny_batch(seed=1))
    torch.testing.assert_close(out_c, out_e, atol=1e-5, rtol=1e-5)
    for gc, ge in zip(grads_c, grads_e, strict=True):
        torch.testing.assert_close(gc, ge, atol=1e-5, rtol=1e-5)
    graphs = counter.frame_count
    assert graphs >= 1

    with torch.compiler.set_stance("fail_on_recompile"):
        forward_backward(compiled, tiny_batch(seed=2))  # same padded length, new values
    assert counter.frame_count == graphs


def test_compile_after_activation_checkpointing_matches_eager() -> None:
    eager, compiled = tiny_backbone("dit"), tiny_backbone("dit")
    f5lite.apply_ac(compiled, "full", 2)
    f5lite.apply_compile(compiled, backend="aot_eager")
    out_c, grads_c = forward_backward(compiled, tiny_batch())
    out_e, grads_e = forward_backward(eager, tiny_batch())
    torch.testing.assert_close(out_c, out_e, atol=1e-5, rtol=1e-5)
    for gc, ge in zip(grads_c, grads_e, strict=True):
        torch.testing.assert_close(gc, ge, atol=1e-5, rtol=1e-5)


def backward_flops(memory_budget: float) -> int:
    torch._dynamo.reset()
    model = tiny_backbone("dit", depth=2)
    f5lite.apply_compile(model, backend="aot_eager_decomp_partition", memory_budget=memory_budget)
    batch = tiny_batch()
    loss = model(batch["x"], batch["cond"], batch["text"], batch["time"]).pow(2).mean()
    with FlopCounterMode(display=False) as counter:
        loss.backward()
    return counter.get_total_flops()


def test_lower_memory_budget_recomputes_more() -> None:
    assert backward_flops(0.0) > backward_flops(1.0)


def test_memory_budget_refused_with_dropout() -> None:
    with pytest.raises(ValueError, match=r"perf.memory_budget=0.5 with model.dropout=0.1 .*#190758"):
        f5lite.apply_compile(tiny_backbone("dit", dropout=0.1), backend="aot_eager", memory_budget=0.5)
    with pytest.raises(ValueError, match=r"perf.memory_budget=1.5 is not valid"):
        f5lite.apply_compile(tiny_backbone("dit"), backend="aot_eager", memory_budget=1.5)


def test_memory_budget_dropout_bug_still_present() -> None:
    """Why the refusal above exists: pytorch/pytorch#190758 on this torch. When this fails, lift the refusal.

    Dropout's mask is inferred from the forward output's zeros; the true gradient follows from it in eager.
    """

    class DropMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.out, self.drop = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32), torch.nn.Dropout(0.5)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.drop(torch.nn.functional.gelu(self.lin(x)))
            return self.out(h).sin(), h

    torch.manual_seed(0)
    functorch_config.activation_memory_budget = 0.5
    model = DropMLP()
    model.compile(backend="aot_eager_decomp_partition", fullgraph=True)
    x = torch.randn(8, 32, requires_grad=True)
    y, h = model(x)
    y.sum().backward()

    x_ref = x.detach().clone().requires_grad_()
    h_ref = torch.nn.functional.gelu(model.lin(x_ref)) * (h != 0) / 0.5
    model.out(h_ref).sin().sum().backward()
    assert not torch.allclose(x.grad, x_ref.grad, atol=1e-4)


def _sample(model: torch.nn.Module, frames: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    cond, text = torch.randn(1, 12, 100, generator=g), torch.randint(0, 40, (1, 9), generator=g)
    return f5lite.sample(model, cond, text, frames, f5lite.SamplerOptions(steps=3, cfg_strength=2.0), seed=0)


def test_inference_compile_samples_like_eager() -> None:
    eager, compiled = tiny_backbone("dit").eval(), tiny_backbone("dit").eval()
    counter = CompileCounterWithBackend("aot_eager")
    f5lite.apply_inference_compile(compiled, backend=counter)
    assert list(compiled.state_dict()) == list(eager.state_dict())
    for frames in (30, 41):
        torch.testing.assert_close(_sample(compiled, frames), _sample(eager, frames), atol=1e-5, rtol=1e-5)
    assert counter.frame_count >= 1  # the blocks did run compiled


@pytest.mark.slow
def test_inference_compile_with_inductor_freezing_matches_eager() -> None:
    eager, compiled = tiny_backbone("dit").eval(), tiny_backbone("dit").eval()
    f5lite.apply_inference_compile(compiled)
    for frames in (30, 41, 52):  # a static graph, then a dynamic one for every later length
        torch.testing.assert_close(_sample(compiled, frames), _sample(eager, frames), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["dit", "mmdit", "unett"])
def test_model_scope_also_compiles_the_per_step_modules_and_matches_eager(name: str) -> None:
    eager, compiled = tiny_backbone(name), tiny_backbone(name)
    counter = CompileCounterWithBackend("aot_eager")
    f5lite.apply_compile(compiled, backend=counter, scope="model")
    others = per_step_modules(compiled)
    assert [n for n, _ in others] == [
        "time_embed",
        "text_embed",
        "audio_embed" if name == "mmdit" else "input_embed",
        "norm_out",
        "proj_out",
    ]
    assert all(m._compiled_call_impl is not None for m in [*compiled.blocks, *(m for _, m in others)])
    assert compiled.rotary_embed._compiled_call_impl is None
    assert list(compiled.state_dict()) == list(eager.state_dict())

    out_c, grads_c = forward_backward(compiled, tiny_batch(seed=1))
    out_e, grads_e = forward_backward(eager, tiny_batch(seed=1))
    # aot_eager runs eager's aten kernels; only the order of a few float32 roundings (eps 1.2e-7) may differ per op.
    tol = 64 * torch.finfo(torch.float32).eps
    torch.testing.assert_close(out_c, out_e, atol=tol, rtol=tol)
    for gc, ge in zip(grads_c, grads_e, strict=True):
        torch.testing.assert_close(gc, ge, atol=tol, rtol=tol)
    # The blocks' graphs (DiT's blocks share one; MMDiT's last block, without a text output, and UNetT's second
    # half, with skip projections, have one more each), then one per other module: each of them ran compiled.
    assert counter.frame_count == {"dit": 1, "mmdit": 2, "unett": 2}[name] + len(others)

    graphs = counter.frame_count
    with torch.compiler.set_stance("fail_on_recompile"):
        forward_backward(compiled, tiny_batch(seed=2))  # same padded length, new values
    assert counter.frame_count == graphs


def test_model_scope_compiles_a_students_step_embedding_and_its_backbones_modules() -> None:
    student = StudentBackbone(tiny_backbone("dit"))
    f5lite.apply_compile(student, backend="aot_eager", scope="model")
    names = [n for n, _ in per_step_modules(student)]
    assert names == [f"backbone.{n}" for n in ("time_embed", "text_embed", "input_embed", "norm_out", "proj_out")] + [
        "step_embed"
    ]
    assert all(student.get_submodule(n)._compiled_call_impl is not None for n in names)


def test_compile_scope_is_refused_without_compile_or_unknown() -> None:
    with pytest.raises(ValueError, match=r"^perf\.compile_scope=model needs perf\.compile=true; set it or leave"):
        compose_config(["+recipe=debug_tiny", "perf.compile_scope=model"])
    with pytest.raises(ValueError, match=r"^perf\.compile_scope='all' is not valid; choose one of: blocks, model$"):
        compose_config(["+recipe=debug_tiny", "perf.compile=true", "perf.compile_scope=all"])
    with pytest.raises(ValueError, match=r"^perf\.compile_scope='all' is not valid"):
        f5lite.apply_compile(tiny_backbone("dit"), backend="aot_eager", scope="all")
    assert compose_config(["+recipe=debug_tiny", "perf.compile=true", "perf.compile_scope=model"]).perf.compile_scope


def test_the_training_setup_compiles_the_configured_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    real = train_setup.apply_compile
    monkeypatch.setattr(train_setup, "apply_compile", lambda m, **kw: real(m, **{**kw, "backend": "aot_eager"}))
    for scope, head_compiled in (("blocks", False), ("model", True)):
        cfg = compose_config(["+recipe=debug_tiny", "perf.compile=true", f"perf.compile_scope={scope}"])
        backbone = train_setup.build_model(cfg, 10, None, torch.device("cpu"), with_ema=False).backbone
        assert all(b._compiled_call_impl is not None for b in backbone.blocks)
        assert all((m._compiled_call_impl is not None) == head_compiled for _, m in per_step_modules(backbone)), scope

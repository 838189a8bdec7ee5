"""Per-block `torch.compile`, applied in place so that state-dict keys never gain `_orig_mod.`.

Compiling the repeated block instead of the whole model ("regional compilation") compiles one graph that every
block reuses, keeps the text and sampling code eager, and leaves the module tree untouched. `fullgraph=True`
makes any graph break an error instead of a silent slowdown.

Scopes (`perf.compile_scope`):
    blocks  each of `backbone.blocks`.
    model   the blocks, and each other module of the backbone that runs in every step, each compiled in place on
            its own: the time embedding, the text embedding, the input (DiT, UNetT) or audio (MMDiT) embedding, the
            output norm and projection, DiT's long skip projection, a student's step embedding. Each is a graph of
            its own, so the blocks keep their one shared graph (compile time does not grow with depth), and the
            backbone's `forward` between them, a few lines of calls and branches, stays eager.
"""

from __future__ import annotations

from typing import Any

import torch
import torch._functorch.config
from torch import nn

from f5lite.models.build import backbone_blocks
from f5lite.models.rope import RotaryEmbedding
from f5lite.sampling.backbone import Backbone

COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
"""`torch.compile` modes offered for training (`perf.compile_mode`). The CUDA-graph modes record one graph per batch
shape, which variable-length speech batches turn into a memory leak, so they are left out."""

COMPILE_SCOPES = ("blocks", "model")
"""What `apply_compile` compiles (`perf.compile_scope`): the blocks, or the blocks and every other per-step module."""


def per_step_modules(backbone: nn.Module) -> list[tuple[str, nn.Module]]:
    """The modules of a backbone besides its blocks that run in every step: what scope `model` also compiles.

    They are the backbone's direct children but the blocks' container and the rotary embedding (its input is an
    int, the length, on which a compiled graph would guard; it builds one small `[n, dh]` table per call), and, for
    a student, its own step embedding and those of the backbone it wraps.

    Args:
        backbone: a DiT, MMDiT or UNetT, or a student of one.

    Returns:
        `(name, module)` pairs, names relative to `backbone` (e.g. `time_embed`, `backbone.proj_out`).
    """
    blocks = backbone_blocks(backbone)
    found = []
    for name, child in backbone.named_children():
        if child is blocks or isinstance(child, RotaryEmbedding):
            continue
        if isinstance(child, Backbone):  # a student's backbone: its own modules, one by one
            found += [(f"{name}.{inner}", module) for inner, module in per_step_modules(child)]
        else:
            found.append((name, child))
    return found


def apply_compile(
    backbone: nn.Module,
    *,
    backend: str | Any = "inductor",
    fullgraph: bool = True,
    dynamic: bool | None = None,
    memory_budget: float | None = None,
    scope: str = "blocks",
    **options: Any,
) -> None:
    """Compile each of `backbone.blocks` (and with scope `model` each other per-step module) in place.

    Each module is compiled with `nn.Module.compile`, so state-dict keys do not change. Apply after `apply_ac` so
    that checkpointed blocks are traced with their checkpoint regions, and after `apply_fp8` so that FP8 casts are
    compiled with the blocks.

    Args:
        backbone: a DiT, MMDiT or UNetT (anything with a `blocks` ModuleList), or a student of one.
        backend: a `torch.compile` backend (`"inductor"`, or `"aot_eager"` for CPU tests).
        fullgraph: fail on graph breaks.
        dynamic: `torch.compile`'s `dynamic` (None lets it mark a dimension dynamic after it changes once).
        memory_budget: the activation memory budget of compiled regions in [0, 1]: 1 saves what the default
            partitioner saves, lower values recompute more in backward to keep less (0 is about full activation
            checkpointing of each block). Sets the process-wide
            `torch._functorch.config.activation_memory_budget`; None leaves it alone.
        scope: `"blocks"`, or `"model"` to also compile the modules `per_step_modules` names.
        **options: passed to `torch.compile` (e.g. `mode`).

    Raises:
        ValueError: an unknown scope, a memory budget outside [0, 1], or below 1 on a backbone with dropout.
    """
    if scope not in COMPILE_SCOPES:
        raise ValueError(f"perf.compile_scope={scope!r} is not valid; choose one of: {', '.join(COMPILE_SCOPES)}")
    if memory_budget is not None:
        if not 0.0 <= memory_budget <= 1.0:
            raise ValueError(f"perf.memory_budget={memory_budget} is not valid; it must be in [0, 1]")
        dropout = max((m.p for m in backbone.modules() if isinstance(m, nn.Dropout)), default=0.0)
        if memory_budget < 1.0 and dropout > 0.0:
            # The budget partitioner may recompute dropout with a fresh mask in backward: wrong gradients with no
            # error (pytorch/pytorch#190758, reproduced on torch 2.14.1; a test pins it).
            raise ValueError(
                f"perf.memory_budget={memory_budget} with model.dropout={dropout} gives wrong gradients "
                "(pytorch/pytorch#190758); set model.dropout=0 or perf.memory_budget=1.0"
            )
        # Read when a graph is compiled, so it must be set before the first call of the compiled blocks.
        torch._functorch.config.activation_memory_budget = memory_budget
    for block in backbone_blocks(backbone):
        block.compile(backend=backend, fullgraph=fullgraph, dynamic=dynamic, **options)
    if scope == "model":
        for _, module in per_step_modules(backbone):
            module.compile(backend=backend, fullgraph=fullgraph, dynamic=dynamic, **options)


def apply_inference_compile(backbone: nn.Module, *, backend: str | Any = "inductor") -> None:
    """Compile each block for inference only, with inductor's weight freezing.

    Freezing folds the weights into the compiled graph as constants (on a CPU, linear weights are pre-packed for
    oneDNN), which is what makes compiled sampling faster than eager there; it also means that loading other weights
    into `backbone` afterwards has no effect on the compiled blocks. Call it once the weights are final, and run the
    backbone under `torch.no_grad()` (as `f5lite.sample` does). Shapes are left to `torch.compile`'s automatic
    dynamic marking: the second distinct length compiles a dynamic graph that serves every later length.

    Args:
        backbone: a DiT, MMDiT or UNetT with its final weights, in eval mode.
        backend: a `torch.compile` backend; freezing is an inductor option, other backends compile without it.
    """
    if backend == "inductor":
        apply_compile(backbone, backend=backend, options={"freezing": True})
    else:
        apply_compile(backbone, backend=backend)

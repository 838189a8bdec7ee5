"""Per-block `torch.compile`, applied in place so that state-dict keys never gain `_orig_mod.`.

Compiling the repeated block instead of the whole model ("regional compilation") compiles one graph that every
block reuses, keeps the text and sampling code eager, and leaves the module tree untouched. `fullgraph=True`
makes any graph break an error instead of a silent slowdown.
"""

from __future__ import annotations

from typing import Any

import torch
import torch._functorch.config
from torch import nn

from f5lite.models.build import backbone_blocks

COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
"""`torch.compile` modes offered for training (`perf.compile_mode`). The CUDA-graph modes record one graph per batch
shape, which variable-length speech batches turn into a memory leak, so they are left out."""


def apply_compile(
    backbone: nn.Module,
    *,
    backend: str | Any = "inductor",
    fullgraph: bool = True,
    dynamic: bool | None = None,
    memory_budget: float | None = None,
    **options: Any,
) -> None:
    """Compile each of `backbone.blocks` in place with `nn.Module.compile`.

    Apply after `apply_ac` so that checkpointed blocks are traced with their checkpoint regions.

    Args:
        backbone: a DiT, MMDiT or UNetT (anything with a `blocks` ModuleList).
        backend: a `torch.compile` backend (`"inductor"`, or `"aot_eager"` for CPU tests).
        fullgraph: fail on graph breaks.
        dynamic: `torch.compile`'s `dynamic` (None lets it mark a dimension dynamic after it changes once).
        memory_budget: the activation memory budget of compiled regions in [0, 1]: 1 saves what the default
            partitioner saves, lower values recompute more in backward to keep less (0 is about full activation
            checkpointing of each block). Sets the process-wide
            `torch._functorch.config.activation_memory_budget`; None leaves it alone.
        **options: passed to `torch.compile` (e.g. `mode`).

    Raises:
        ValueError: a memory budget outside [0, 1], or below 1 on a backbone with dropout.
    """
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

"""Activation checkpointing applied from outside a backbone, block by block, without changing state-dict keys.

Modes:
    none       keep every activation (restores blocks wrapped earlier).
    full       recompute the whole forward of every `every_n`-th block during backward (blocks 0, n, 2n, ...):
               only the block inputs are kept. `every_n=1` is classic per-block checkpointing.
    selective  op-level selective checkpointing of the same blocks: the outputs of matmuls and attention are
               kept, everything cheap (norms, activations, elementwise) is recomputed.

The block's `forward` is replaced on the instance (no wrapper module), so parameter names and state-dict keys stay
those of F5-TTS. Apply before `apply_compile` (torchtitan's order: AC, then compile, then data parallelism).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from f5lite.models.build import backbone_blocks
from f5lite.models.packing import VARLEN_OPS

AC_MODES = ("none", "full", "selective")
"""Accepted `mode` values (also `perf.ac.mode` in the training config)."""

_PLAIN_FORWARD = "_f5lite_plain_forward"

# Outputs worth keeping: they are the expensive ops to recompute. Attention has one aten op per SDPA kernel.
_SAVE_OPS = {
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.linear.default,
    torch.ops.aten.convolution.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_cudnn_attention.default,
    *VARLEN_OPS,
}


# Newer torch can route the tensors that selective checkpointing saves through saved-tensor hooks (CPU offload,
# memory accounting) like every other saved tensor; older versions bypass the hooks and warn.
_SAC_KWARGS: dict[str, Any] = (
    {"respect_saved_tensors_hooks": True}
    if "respect_saved_tensors_hooks" in inspect.signature(checkpoint).parameters
    else {}
)


def _policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    return CheckpointPolicy.MUST_SAVE if op in _SAVE_OPS else CheckpointPolicy.PREFER_RECOMPUTE


def _selective_context() -> tuple[Any, Any]:
    return create_selective_checkpoint_contexts(_policy)


def _checkpointed(forward: Any, selective: bool, *args: Any, **kwargs: Any) -> Any:
    if selective:
        return checkpoint(forward, *args, use_reentrant=False, context_fn=_selective_context, **_SAC_KWARGS, **kwargs)
    return checkpoint(forward, *args, use_reentrant=False, **kwargs)


def apply_ac(backbone: nn.Module, mode: str, every_n: int = 1) -> list[int]:
    """Turn activation checkpointing on (or off) for a backbone's `blocks`.

    Args:
        backbone: a DiT, MMDiT or UNetT (anything with a `blocks` ModuleList).
        mode: `"none"`, `"full"` or `"selective"`.
        every_n: checkpoint blocks `0, every_n, 2 * every_n, ...`; larger saves less memory and recomputes less.

    Returns:
        Indices of the checkpointed blocks.

    Raises:
        ValueError: unknown mode or `every_n < 1`.
    """
    if mode not in AC_MODES:
        raise ValueError(f"perf.ac.mode={mode!r} is not valid; choose one of: {', '.join(AC_MODES)}")
    if every_n < 1:
        raise ValueError(f"perf.ac.every_n={every_n} is not valid; it must be at least 1")
    chosen = []
    for i, block in enumerate(backbone_blocks(backbone)):
        plain = block.__dict__.pop(_PLAIN_FORWARD, None)
        if plain is not None:
            del block.forward  # back to the class's forward
        if mode == "none" or i % every_n:
            continue
        plain = block.forward
        block.__dict__[_PLAIN_FORWARD] = plain
        block.forward = functools.partial(_checkpointed, plain, mode == "selective")
        chosen.append(i)
    return chosen

"""Dropout whose mask costs a quarter of a random draw per element, applied from outside a backbone.

Shapes: any; the mask has the input's shape.

Why: on a CPU, `torch.nn.functional.dropout` draws one Bernoulli sample per element from torch's Mersenne-Twister
generator and then multiplies and divides in two more passes; in a DiT training step that is about 8 % of the
time (F5-TTS's DiT drops after every attention output and inside every feed-forward). Here one 64-bit draw gives
four 16-bit numbers, an element is dropped when its number falls below `round(p * 65536)` of the 65,536, and the
kept ones are scaled in one `where` pass: a fifth of the cost (see `scripts/bench_train.py --configs f5tts`).

What stays equal: the drop probability is `p` rounded to a multiple of 1/65536 (0.1 becomes 0.1000061), and the
scale is the inverse of the kept fraction of that rounded probability, so the expected output is the input,
exactly as with torch's dropout. The draws come from torch's global generator, so the trainer's per-step reseeding
(`f5lite.train.seeding`) and activation checkpointing's replay of the forward give the same masks as before.
Only the mask for a given seed differs from torch's; no test or checkpoint depends on that.

`kernel="auto"` picks this on a CPU without `torch.compile` (inductor fuses torch's dropout into its generated
kernels, and CUDA's fused dropout kernel is already cheap); `torch` restores `nn.Dropout`. The replacement is a
module without parameters or buffers, so state-dict keys do not change.
"""

from __future__ import annotations

import torch
from torch import nn

DROPOUT_KERNELS = ("auto", "torch", "bits")
"""Accepted `perf.dropout` values."""

_LEVELS = 1 << 16
"""Possible values of one 16-bit lane of a random word."""


def dropout_threshold(p: float) -> tuple[int, float]:
    """The signed 16-bit threshold under which an element is dropped, and the scale of the kept ones.

    Args:
        p: drop probability in [0, 1).

    Returns:
        `(threshold, scale)`: a lane `v` in [-32768, 32767] is dropped when `v < threshold`; kept values are
        multiplied by `scale = 65536 / (65536 - round(p * 65536))`.
    """
    dropped = round(p * _LEVELS)
    return dropped - _LEVELS // 2, _LEVELS / (_LEVELS - dropped)


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> torch.Tensor:
    """A bool mask of `shape`, each element True with probability `1 - p` (rounded, see `dropout_threshold`).

    Args:
        shape: the mask's shape.
        p: drop probability in [0, 1).
        device: where to draw.

    Returns:
        bool tensor of `shape`.
    """
    n = shape.numel()
    # The full signed range: `random_()` alone leaves an int64's top bit at 0, and with it one lane in four.
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(1 << 63), None)
    threshold, _ = dropout_threshold(p)
    return words.view(torch.int16)[:n].view(shape) >= threshold


class _BitsDropoutFunction(torch.autograd.Function):
    """Forward `where(keep, x, 0) * scale`; backward the same with the saved bool mask (1 byte per element)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, p: float) -> torch.Tensor:
        keep = keep_mask(x.shape, p, x.device)
        _, scale = dropout_threshold(p)
        ctx.save_for_backward(keep)
        ctx.scale = scale  # type: ignore[attr-defined]
        return torch.where(keep, x, 0.0).mul_(scale)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (keep,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return torch.where(keep, grad, 0.0).mul_(ctx.scale), None  # type: ignore[attr-defined]


class BitsDropout(nn.Module):
    """Drop-in for `nn.Dropout` (same `p`, same train/eval behaviour) with the cheaper mask of this module."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout p={p!r} is not valid; it must be in [0, 1)")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Drop and rescale in training; the identity in eval mode or with `p = 0`.

        Args:
            x: any shape.

        Returns:
            `x`'s shape and dtype.
        """
        if not self.training or self.p == 0.0:
            return x
        out: torch.Tensor = _BitsDropoutFunction.apply(x, self.p)
        return out

    def extra_repr(self) -> str:
        """`p=...` in the module's printout, as `nn.Dropout` shows it."""
        return f"p={self.p}"


def resolve_dropout_kernel(kernel: str, device: torch.device, compiled: bool) -> str:
    """`auto` made concrete: `bits` on a CPU without compile, `torch` otherwise; other names as given.

    Raises:
        ValueError: an unknown name.
    """
    if kernel not in DROPOUT_KERNELS:
        raise ValueError(f"perf.dropout={kernel!r} is not valid; choose one of: {', '.join(DROPOUT_KERNELS)}")
    if kernel != "auto":
        return kernel
    return "bits" if device.type == "cpu" and not compiled else "torch"


def apply_dropout(backbone: nn.Module, kernel: str) -> int:
    """Swap every dropout layer of `backbone` for the named kernel's, in place; keys do not change.

    Args:
        backbone: the model.
        kernel: `bits` (`BitsDropout`) or `torch` (`nn.Dropout`); resolve `auto` first.

    Returns:
        How many layers now use `kernel`.

    Raises:
        ValueError: `auto` or an unknown name.
    """
    if kernel not in ("bits", "torch"):
        raise ValueError(f"apply_dropout takes 'bits' or 'torch', not {kernel!r} (resolve 'auto' first)")
    layer = BitsDropout if kernel == "bits" else nn.Dropout
    swaps = [
        (parent, name, child.p)
        for parent in backbone.modules()
        for name, child in parent.named_children()
        if isinstance(child, (nn.Dropout, BitsDropout))
    ]
    for parent, name, p in swaps:
        replacement = layer(p)
        replacement.train(parent.training)
        setattr(parent, name, replacement)
    return len(swaps)

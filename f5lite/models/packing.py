"""Sequence packing: a padded batch's real frames laid end to end, so the transformer does no work on padding.

Shapes: b batch, n padded frames, N = the batch's real frames (the sum of its lengths), d width, h heads, dh head
width.

A padded batch `[b, n, d]` spends the blocks' matmuls and attention on every padded frame. Packed, the same
frames are one sequence `[1, N, d]` in which each utterance (a "document") attends only to its own frames: through
varlen flash attention (`cu_seqlens`) on a CUDA GPU in 16-bit; elsewhere attention alone goes back to the padded
layout for `scaled_dot_product_attention` with padded keys masked (the path the CPU tests check; a block-diagonal
`[N, N]` mask would cost memory quadratic in the whole batch). Everything that is per utterance in the padded
layout stays per utterance: the time modulations `[b, d]` are spread to the frames of their document (`spread`,
`spread_mul`), and rotary positions restart at 0 in each document (`Packing.positions`). The embeddings in front of
the blocks (convolutions across frames) run in the padded layout, where padding is already masked, and the output
head runs packed before `unpack` puts the frames back in `[b, n, ...]` with zeros at padding.

Packed attention is what the padded layout computes with its keys masked (`attn_mask_enabled=true`): a model
trained with padded keys (every released F5-TTS checkpoint attends to padding) computes something else packed, so
`apply_packing` asks for key masking rather than change the model's function silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from f5lite.models.rope import Rope

try:  # PyTorch 2.10+; older versions take the padded-attention path
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # pragma: no cover - depends on the installed torch
    varlen_attn = None  # type: ignore[assignment]

VARLEN_OPS: tuple[Any, ...] = (torch.ops.torch_attn._varlen_attn.default,) if varlen_attn is not None else ()
"""The operator varlen attention runs as (a custom op), for selective activation checkpointing to keep."""


@dataclass(frozen=True)
class Packing:
    """Where each real frame of a padded batch sits in the packed sequence.

    Attributes:
        index: `[N]` int64, each packed frame's flat position `i * n + j` in the padded batch.
        document: `[N]` int64, each packed frame's utterance `i`.
        positions: `[N]` int64, each packed frame's position `j` inside its utterance.
        cu_seqlens: `[b + 1]` int32, where each utterance starts in the packed sequence (then N).
        max_len: the longest utterance, in frames.
        batch: b.
        frames: n, the padded length.
    """

    index: torch.Tensor
    document: torch.Tensor
    positions: torch.Tensor
    cu_seqlens: torch.Tensor
    max_len: int
    batch: int
    frames: int

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """`[b, n, c]` padded -> `[1, N, c]` real frames, utterance after utterance."""
        return x.flatten(0, 1).index_select(0, self.index)[None]

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """`[1, N, c]` packed -> `[b, n, c]`, zeros at padded frames."""
        flat = x.new_zeros(self.batch * self.frames, x.shape[-1]).index_copy(0, self.index, x[0])
        return flat.view(self.batch, self.frames, -1)

    def frame_mask(self) -> torch.Tensor:
        """`[b, n]` bool, True at real frames: the mask the packing was made from."""
        lengths = (self.cu_seqlens[1:] - self.cu_seqlens[:-1]).long()
        return torch.arange(self.frames, device=lengths.device)[None] < lengths[:, None]

    def rope(self, rope: Rope) -> Rope:
        """Rotary tables for `0..n-1` `[n, dh]` -> each packed frame's own position `[N, dh]`."""
        return rope[0].index_select(0, self.positions), rope[1].index_select(0, self.positions)


def pack_mask(mask: torch.Tensor) -> Packing:
    """The packing of a batch from its frame mask.

    Reads back to the host once (the packed length sizes every tensor after it).

    Args:
        mask: `[b, n]` bool, True = real frame; each row's real frames come first (a length mask).

    Returns:
        The batch's `Packing`.

    Raises:
        ValueError: a row whose real frames do not come first (a hole, or padding in front).
    """
    b, n = mask.shape
    device = mask.device
    lengths = mask.sum(dim=1)
    holes = (mask != (torch.arange(n, device=device)[None] < lengths[:, None])).any()
    # The one read-back of the step (a sync on a GPU): validity, the packed length and the longest utterance.
    bad, total, max_len = torch.stack((holes.long(), lengths.sum(), lengths.max())).tolist()
    if bad:
        raise ValueError("packing needs length masks: each row's real frames first, then padding")
    starts = torch.cumsum(lengths, 0) - lengths
    document = torch.repeat_interleave(torch.arange(b, device=device), lengths, output_size=total)
    positions = torch.arange(total, device=device) - starts.index_select(0, document)
    return Packing(
        index=document * n + positions,
        document=document,
        positions=positions,
        cu_seqlens=torch.cat((starts, lengths.sum()[None])).to(torch.int32),
        max_len=max_len,
        batch=b,
        frames=n,
    )


def spread(v: torch.Tensor, packing: Packing | None) -> torch.Tensor:
    """A per-utterance vector `[b, c]` made to broadcast over frames: `[b, 1, c]`, or `[1, N, c]` when packed."""
    return v[:, None] if packing is None else v.index_select(0, packing.document)[None]


class _SpreadMul(torch.autograd.Function):
    """`a * v[document]` that keeps `v [b, c]` for backward, not its `[N, c]` spread (autograd would keep that)."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, v: torch.Tensor, document: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, v, document)
        return a * v.index_select(0, document)[None]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        a, v, document = ctx.saved_tensors
        grad_a = grad_v = None
        if ctx.needs_input_grad[0]:
            grad_a = (grad * v.index_select(0, document)[None]).to(a.dtype)
        if ctx.needs_input_grad[1]:
            per_frame = (grad * a)[0]  # in the product's dtype, as autograd's own reduction of a broadcast
            grad_v = per_frame.new_zeros(v.shape).index_add_(0, document, per_frame).to(v.dtype)
        return grad_a, grad_v, None


def spread_mul(a: torch.Tensor, v: torch.Tensor, packing: Packing | None) -> torch.Tensor:
    """`a * spread(v)`: frames `[b, n, c]` (or `[1, N, c]` packed) times their utterance's `v [b, c]`.

    Packed, the spread `[N, c]` is recomputed in backward rather than kept, so a modulation saves what it saves
    padded (`a` and `v`), not a frame-sized copy of `v`: four per DiT block.
    """
    if packing is None:
        return a * v[:, None]
    out: torch.Tensor = _SpreadMul.apply(a, v, packing.document)
    return out


def uses_varlen(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether packed attention runs varlen flash attention: on CUDA, in 16-bit, with a torch that has it."""
    return varlen_attn is not None and device.type == "cuda" and dtype in (torch.float16, torch.bfloat16)


def packed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing) -> torch.Tensor:
    """Attention of each packed frame over its own utterance's frames (varlen flash attention, or padded SDPA).

    Args:
        q: queries `[1, h, N, dh]`.
        k: keys `[1, h, N, dh]`.
        v: values `[1, h, N, dh]`.
        packing: the batch's packing.

    Returns:
        `[1, h, N, dh]`.
    """
    if uses_varlen(q.device, q.dtype):
        assert varlen_attn is not None  # for the type checker: uses_varlen checked it
        q_, k_, v_ = (t[0].transpose(0, 1) for t in (q, k, v))  # [N, h, dh], the kernel's layout
        c, m = packing.cu_seqlens, packing.max_len
        out = varlen_attn(q_, k_, v_, c, c, m, m)
        assert isinstance(out, torch.Tensor)
        return out.transpose(0, 1)[None]
    heads = q.shape[1]
    padded = [packing.unpack(t[0].transpose(0, 1).flatten(1)[None]).unflatten(-1, (heads, -1)) for t in (q, k, v)]
    qp, kp, vp = (t.transpose(1, 2) for t in padded)  # [b, h, n, dh]
    key_mask = packing.frame_mask()[:, None, None, :]
    out = nn.functional.scaled_dot_product_attention(qp, kp, vp, attn_mask=key_mask)
    return packing.pack(out.transpose(1, 2).flatten(2)).unflatten(-1, (heads, -1)).transpose(1, 2)


@runtime_checkable
class Packable(Protocol):
    """A backbone that can run its masked batches packed (the DiT)."""

    packed: bool


def apply_packing(backbone: nn.Module) -> None:
    """Run the backbone's masked batches packed (`perf.pack`), from outside: no parameter or key changes.

    Args:
        backbone: a DiT whose attention masks padded keys (`attn_mask_enabled=True`).

    Raises:
        ValueError: another backbone, or a DiT whose padded attention sees padding (packed, it would not).
    """
    if not isinstance(backbone, Packable):
        raise ValueError(f"perf.pack=true packs DiT backbones only; this one is a {type(backbone).__name__}")
    if not all(getattr(m, "mask_keys", True) for m in backbone.modules()):
        raise ValueError(
            "perf.pack=true needs model.attn_mask_enabled=true: packed attention never sees padding, which this "
            "model's padded attention does"
        )
    backbone.packed = True


def describe_packing(device: torch.device, dtype: torch.dtype) -> str:
    """Which kernel packed attention runs on `device` in `dtype` (the autocast dtype), as one line for the log."""
    if uses_varlen(device, dtype):
        return f"perf.pack: varlen flash attention on {device.type} for {dtype}"
    why = "this torch has none" if varlen_attn is None else "it needs a CUDA GPU and bf16 or fp16"
    return (
        f"perf.pack: attention in the padded layout (SDPA, padded keys masked) on {device.type} for {dtype}, the "
        f"rest packed (no varlen flash attention: {why})"
    )

"""Self-attention (DiT, UNetT) and joint audio-text attention (MMDiT) through `scaled_dot_product_attention`.

Shapes: b batch, h heads, n audio frames, nt text tokens, d width, dh head width.

Masks are passed to SDPA as `[b, 1, 1, keys]` booleans that broadcast over heads and queries, never expanded to
`[b, h, n, n]`. With `attn_mask_enabled=False` (every released F5-TTS model) padded frames stay keys, exactly as
in F5-TTS; in both cases outputs at padded queries are zeroed.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from f5lite.models.packing import Packing, packed_attention
from f5lite.models.rope import Rope, apply_rope

QK_NORMS = (None, "rms_norm")
"""Per-head normalization of queries and keys (`qk_norm`)."""

SDPA_BACKENDS: dict[str, SDPBackend | None] = {
    "auto": None,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
"""Attention kernels by name (`perf.sdpa_backend`); `auto` lets PyTorch pick."""


def sdpa_backend(name: str) -> contextlib.AbstractContextManager[None]:
    """A context in which `scaled_dot_product_attention` uses only the named kernel (`auto`: no restriction).

    Raises:
        ValueError: an unknown name.
    """
    if name not in SDPA_BACKENDS:
        raise ValueError(f"sdpa_backend={name!r} is not valid; choose one of: {', '.join(SDPA_BACKENDS)}")
    backend = SDPA_BACKENDS[name]
    return contextlib.nullcontext() if backend is None else sdpa_kernel([backend])


_KERNEL_NAMES = {
    SDPBackend.MATH: "math (unfused)",
    SDPBackend.FLASH_ATTENTION: "flash attention",
    SDPBackend.EFFICIENT_ATTENTION: "memory-efficient attention",
    SDPBackend.CUDNN_ATTENTION: "cuDNN attention",
    SDPBackend.OVERRIDEABLE: "an overrideable (third-party) kernel",
}


def describe_sdpa(name: str, device: torch.device, dtype: torch.dtype, heads: int, dim_head: int, masked: bool) -> str:
    """Which kernel `scaled_dot_product_attention` picks under `sdpa_backend(name)`, as one line for the log.

    PyTorch is asked for its choice (`torch._fused_sdp_choice`) on a small probe of the model's head layout, dtype
    and masking, with gradients, as training calls it; the kernels the global switches enable are listed too. The
    choice can depend on the sequence length for some kernels, so it is what the probe got, not a promise.

    Args:
        name: `perf.sdpa_backend`.
        device: where attention runs.
        dtype: the dtype attention sees (the autocast dtype under mixed precision).
        heads: attention heads.
        dim_head: channels per head.
        masked: whether keys are masked (`attn_mask_enabled`).

    Returns:
        e.g. `sdpa_backend=auto: flash attention on cpu for torch.float32 (enabled: flash, efficient, cudnn, math)`.
    """
    probe = torch.zeros(1, heads, 8, dim_head, device=device, dtype=dtype, requires_grad=True)
    mask = torch.ones(1, 1, 1, 8, dtype=torch.bool, device=device) if masked else None
    with sdpa_backend(name):
        enabled = {
            "flash": torch.backends.cuda.flash_sdp_enabled(),
            "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
            "cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
            "math": torch.backends.cuda.math_sdp_enabled(),
        }
        try:
            kernel = _KERNEL_NAMES.get(SDPBackend(torch._fused_sdp_choice(probe, probe, probe, mask)), "unknown")
        except RuntimeError as err:  # training would fail on its first step with this error
            kernel = f"no usable kernel ({str(err).splitlines()[0]})"
        except (AttributeError, ValueError):  # a private API, which may change: report rather than fail
            kernel = "not determinable with this PyTorch"
    switches = ", ".join(k for k, on in enabled.items() if on) or "none"
    return f"sdpa_backend={name}: {kernel} on {device.type} for {dtype} (enabled: {switches})"


def _qk_norm(kind: str | None, dim_head: int) -> nn.Module | None:
    if kind not in QK_NORMS:
        raise ValueError(f"qk_norm={kind!r} is not valid; choose one of: {', '.join(map(repr, QK_NORMS))}")
    return None if kind is None else nn.RMSNorm(dim_head, eps=1e-6)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x.unflatten(-1, (heads, -1)).transpose(1, 2)


def _rope_first_heads(x: torch.Tensor, rope: Rope, rope_heads: int | None) -> torch.Tensor:
    if rope_heads is None:
        return apply_rope(x, rope)
    return torch.cat((apply_rope(x[:, :rope_heads], rope), x[:, rope_heads:]), dim=1)


class Attention(nn.Module):
    """Multi-head self-attention with F5-TTS's projections (`to_q`, `to_k`, `to_v`, `to_out.0`)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        dim_head: int,
        dropout: float,
        qk_norm: str | None = None,
        rope_heads: int | None = None,
        mask_keys: bool = False,
    ) -> None:
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.rope_heads = rope_heads
        self.mask_keys = mask_keys
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.q_norm = _qk_norm(qk_norm, dim_head)
        self.k_norm = _qk_norm(qk_norm, dim_head)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(dropout)])

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, rope: Rope, packing: Packing | None = None
    ) -> torch.Tensor:
        """Attend over the sequence.

        Args:
            x: `[b, n, d]`, or `[1, N, d]` packed (then `mask` is None).
            mask: `[b, n]` bool, True = real frame, or None.
            rope: `(cos, sin)` `[n, dh]` (`[N, dh]` packed: each frame's position in its utterance).
            packing: the batch's packing when `x` is packed: each frame attends to its own utterance only.

        Returns:
            Like `x`, zero at padded frames.
        """
        q, k, v = _heads(self.to_q(x), self.heads), _heads(self.to_k(x), self.heads), _heads(self.to_v(x), self.heads)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = _rope_first_heads(q, rope, self.rope_heads), _rope_first_heads(k, rope, self.rope_heads)
        if packing is not None:
            out = packed_attention(q, k, v, packing)
        else:
            key_mask = mask[:, None, None, :] if self.mask_keys and mask is not None else None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
        out = self.to_out[1](self.to_out[0](out.transpose(1, 2).flatten(2)))
        if mask is not None:
            out = out.masked_fill(~mask[..., None], 0.0)
        return out


class JointAttention(nn.Module):
    """MMDiT attention over the concatenation of audio and text, with separate projections per stream.

    The last MMDiT block is "context pre-only": it has no `to_out_c`, and only the audio output is used.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        dim_head: int,
        dropout: float,
        qk_norm: str | None = None,
        context_pre_only: bool = False,
        mask_keys: bool = False,
    ) -> None:
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.mask_keys = mask_keys
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.q_norm = _qk_norm(qk_norm, dim_head)
        self.k_norm = _qk_norm(qk_norm, dim_head)
        self.to_q_c = nn.Linear(dim, inner)
        self.to_k_c = nn.Linear(dim, inner)
        self.to_v_c = nn.Linear(dim, inner)
        self.c_q_norm = _qk_norm(qk_norm, dim_head)
        self.c_k_norm = _qk_norm(qk_norm, dim_head)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(dropout)])
        self.to_out_c = None if context_pre_only else nn.Linear(inner, dim)

    def forward(
        self,
        x: torch.Tensor,
        c: torch.Tensor,
        mask: torch.Tensor | None,
        c_mask: torch.Tensor,
        rope: Rope,
        c_rope: Rope,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Joint attention.

        Args:
            x: audio `[b, n, d]`.
            c: text `[b, nt, d]`.
            mask: `[b, n]` bool audio mask, or None.
            c_mask: `[b, nt]` bool, True = real token.
            rope: audio `(cos, sin)` `[n, dh]`.
            c_rope: text `(cos, sin)` `[nt, dh]`.

        Returns:
            `(x_out [b, n, d], c_out [b, nt, d] or None for a context-pre-only block)`.
        """
        h = self.heads
        q, k, v = _heads(self.to_q(x), h), _heads(self.to_k(x), h), _heads(self.to_v(x), h)
        cq, ck, cv = _heads(self.to_q_c(c), h), _heads(self.to_k_c(c), h), _heads(self.to_v_c(c), h)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.c_q_norm is not None and self.c_k_norm is not None:
            cq, ck = self.c_q_norm(cq), self.c_k_norm(ck)
        q, k = apply_rope(q, rope), apply_rope(k, rope)
        cq, ck = apply_rope(cq, c_rope), apply_rope(ck, c_rope)
        key_mask = None
        if self.mask_keys and mask is not None:
            key_mask = torch.cat((mask, c_mask), dim=1)[:, None, None, :]
        out = F.scaled_dot_product_attention(
            torch.cat((q, cq), dim=2), torch.cat((k, ck), dim=2), torch.cat((v, cv), dim=2), attn_mask=key_mask
        )
        out = out.transpose(1, 2).flatten(2)
        n = x.shape[1]
        x_out = self.to_out[1](self.to_out[0](out[:, :n]))
        if mask is not None:
            x_out = x_out.masked_fill(~mask[..., None], 0.0)
        if self.to_out_c is None:
            return x_out, None
        c_out = self.to_out_c(out[:, n:]).masked_fill(~c_mask[..., None], 0.0)
        return x_out, c_out

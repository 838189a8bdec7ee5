"""Analytic FLOPs of a training step of a DiT / UNetT / MMDiT, and the peak FLOP/s, for model FLOPs utilization (MFU).

The PaLM / torchtitan rule with the corrections DiTs need (techniques.md section 2.2): per sample,
`6 * N_frame * T + 12 * L * inner * S ** 2` (+ MMDiT's text stream). `N_frame` counts only the linear and convolution
weights applied to every frame; the per-sample ones (time MLP, AdaLN modulation) and embedding lookups would overstate
F5-TTS v1 Base's FLOPs by ~70 %. The attention is bidirectional (4 * S^2 * inner per layer forward, x3 to train). MFU
counts each sample's valid frames and no activation-checkpointing recompute (torchtitan's convention).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import torch
from torch import nn

from f5lite.models.build import backbone_blocks

PEAK_FLOPS = {
    "H100 SXM": 989.4e12,
    "H100 80GB HBM3": 989.4e12,  # how torch names the SXM part
    "H100 PCIe": 756e12,
    "H100 NVL": 835e12,
    "H200": 989.4e12,
    "A100": 312e12,
}
"""Dense bf16 tensor-core peaks (no sparsity), by a substring of `torch.cuda.get_device_name()`."""

_PER_SAMPLE = ("time_embed", "attn_norm", "norm_out")  # applied once per sample, not per frame
_TEXT_STREAM = ("to_q_c", "to_k_c", "to_v_c", "to_out_c", "ff_c")  # MMDiT's: over the text tokens, not the frames


def per_frame_params(backbone: nn.Module) -> tuple[int, int]:
    """Linear and convolution weights (no biases) applied per audio frame and per text token (0 but for MMDiT)."""
    audio = text = 0
    for name, module in backbone.named_modules():
        if not isinstance(module, nn.Linear | nn.Conv1d) or any(p.startswith(_PER_SAMPLE) for p in name.split(".")):
            continue
        if any(f".{part}" in f".{name}" for part in _TEXT_STREAM):
            text += module.weight.numel()
        else:
            audio += module.weight.numel()
    return audio, text


def training_flops(backbone: nn.Module, frames: Sequence[int], text_tokens: Sequence[int] | None = None) -> float:
    """Model FLOPs of one training step (forward + backward) of a DiT, MMDiT or UNetT over a batch.

    `frames`: each sample's valid mel frames (padded ones give hardware FLOPs); `text_tokens`: for MMDiT's text stream.
    """
    audio, text = per_frame_params(backbone)
    blocks = backbone_blocks(backbone)
    to_q = next((m.to_q for m in blocks[0].modules() if isinstance(getattr(m, "to_q", None), nn.Linear)), None)
    if not isinstance(to_q, nn.Linear):
        raise ValueError(f"{type(backbone).__name__}: no attention projection (to_q) in its blocks")
    inner: int = to_q.out_features
    extra = 1 if type(backbone).__name__ == "UNetT" else 0  # UNetT's time token joins the sequence
    tokens = text_tokens if text_tokens is not None and text else [0] * len(frames)
    total = 0.0
    for t, nt in zip(frames, tokens, strict=True):
        total += 6 * audio * t + 6 * text * nt + 12 * len(blocks) * inner * (t + extra + nt) ** 2
    return total


def table_peak_flops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named like `torch.cuda.get_device_name()` ("NVIDIA H100 80GB HBM3"), or None."""
    squeezed = device_name.replace(" ", "").lower()
    return next((peak for key, peak in PEAK_FLOPS.items() if key.replace(" ", "").lower() in squeezed), None)


def peak_flops(device: torch.device, dtype: torch.dtype) -> tuple[float | None, str]:
    """The peak FLOP/s of MFU, and its source: a GPU's from `PEAK_FLOPS` (or None), a CPU's measured `dtype` GEMM."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = table_peak_flops(name)
        return peak, f"{name} ({'table, dense bf16' if peak else 'no peak in the table'})"
    n, a = 256, torch.randn(256, 256, dtype=dtype)

    def gemm() -> float:
        start = time.perf_counter()
        a @ a
        return time.perf_counter() - start

    # It grows unless one already takes 50 ms: a CPU without fast kernels for the dtype (bf16 on an AMD Zen 3 under
    # torch 2.14: 0.3 GFLOP/s) would otherwise spend minutes measuring a figure it reaches early.
    while n < 2048 and gemm() < 0.05:
        n *= 2
        a = torch.randn(n, n, dtype=dtype)
    return 2 * n**3 / statistics.median(gemm() for _ in range(5)), f"measured {dtype} GEMM {n}^2"

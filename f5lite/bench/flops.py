"""Analytic FLOPs of a training step of a DiT / UNetT / MMDiT, for model FLOPs utilization (MFU).

The PaLM / torchtitan rule, with the corrections DiTs need (reference: techniques.md section 2.2):

    FLOPs_step = sum over samples of [ 6 * N_frame * T_i + 12 * L * inner * S_i ** 2 ]  (+ the MMDiT text stream)

- `N_frame` counts only the weights applied to every frame: linear and convolution weights of the input
  projection, the conv position embedding, the frame-aligned text refinement, the attention and feed-forward
  layers and the output projection. Per-sample weights (time MLP, AdaLN modulation) and embedding lookups are
  excluded: they act on one vector per sample, and counting them per frame would overstate FLOPs by ~70 % on F5-TTS
  v1 Base.
- The attention term is bidirectional: 4 * S^2 * inner per layer forward, times 3 for training.
- MFU counts each sample's valid frames `T_i` and no activation-checkpointing recompute (torchtitan's convention).
"""

from __future__ import annotations

from collections.abc import Sequence

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

# Modules applied once per sample (time embedding, AdaLN modulation), not per frame.
_PER_SAMPLE = ("time_embed", "attn_norm", "norm_out")
# MMDiT's text stream: its matmuls run over the text tokens, not the audio frames.
_TEXT_STREAM = ("to_q_c", "to_k_c", "to_v_c", "to_out_c", "ff_c")


def _is_text_stream(name: str) -> bool:
    return any(f".{part}" in f".{name}" for part in _TEXT_STREAM)


def per_frame_params(backbone: nn.Module) -> tuple[int, int]:
    """Weights applied per audio frame and per text token (MMDiT's text stream; 0 for DiT/UNetT).

    Returns:
        `(audio_params, text_params)`: counts of linear and convolution weights (biases excluded).
    """
    audio = text = 0
    for name, module in backbone.named_modules():
        parts = name.split(".")
        if not isinstance(module, nn.Linear | nn.Conv1d) or any(p.startswith(_PER_SAMPLE) for p in parts):
            continue
        weight = module.weight.numel()
        if _is_text_stream(name):
            text += weight
        else:
            audio += weight
    return audio, text


def _layers_and_inner(backbone: nn.Module) -> tuple[int, int]:
    blocks = backbone_blocks(backbone)
    for module in blocks[0].modules():
        to_q = getattr(module, "to_q", None)
        if isinstance(to_q, nn.Linear):
            return len(blocks), to_q.out_features
    raise ValueError(f"{type(backbone).__name__}: no attention projection (to_q) in its blocks")


def training_flops(backbone: nn.Module, frames: Sequence[int], text_tokens: Sequence[int] | None = None) -> float:
    """Model FLOPs of one training step (forward + backward) over a batch.

    Args:
        backbone: the model (DiT, MMDiT, UNetT).
        frames: valid mel frames of each sample (use padded lengths for hardware FLOPs).
        text_tokens: text length of each sample, for MMDiT's text stream (ignored by the other backbones).

    Returns:
        FLOPs of the step.
    """
    audio, text = per_frame_params(backbone)
    layers, inner = _layers_and_inner(backbone)
    extra = 1 if type(backbone).__name__ == "UNetT" else 0  # UNetT's time token joins the sequence
    tokens = text_tokens if text_tokens is not None and text else [0] * len(frames)
    total = 0.0
    for t, nt in zip(frames, tokens, strict=True):
        seq = t + extra + nt
        total += 6 * audio * t + 6 * text * nt + 12 * layers * inner * seq**2
    return total


def table_peak_flops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named like `torch.cuda.get_device_name()`, or None when it is not in the table.

    Args:
        device_name: e.g. "NVIDIA H100 80GB HBM3".

    Returns:
        FLOP/s from `PEAK_FLOPS`, matched on a substring with spaces and case ignored.
    """
    squeezed = device_name.replace(" ", "").lower()
    for key, peak in PEAK_FLOPS.items():
        if key.replace(" ", "").lower() in squeezed:
            return peak
    return None


def model_flops_utilization(flops_per_step: float, step_seconds: float, peak_flops: float) -> float:
    """MFU: achieved model FLOP/s over the hardware peak (0..1)."""
    return flops_per_step / step_seconds / peak_flops

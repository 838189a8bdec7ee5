"""FP8 training of the blocks' Linear layers with torchao's float8 training, applied from outside without changing keys.

The matmuls of the chosen `nn.Linear` layers run in FP8 (e4m3 for inputs and weights, e5m2 for gradients, one
dynamic scale per tensor, torchao's default recipe) on GPUs with FP8 tensor cores: compute capability 8.9 or newer
(Ada, Hopper, Blackwell). Each chosen layer becomes torchao's `Float8Linear`, an `nn.Linear` subclass that holds the
same `weight` and `bias` parameters and casts them to FP8 in every forward, so the parameters (fp32 master
weights), the optimizer state, the EMA (the state dict's tensors, by key), checkpoints and exports keep their dtypes,
and the state-dict keys and parameter names stay F5-TTS's.

Which layers: the Linears inside `backbone.blocks` (attention projections, feed-forward, UNetT's skip projections)
whose input and output widths are multiples of 16, which `torch._scaled_mm` requires of a weight. The blocks'
AdaLN modulations are left as they are: they see one row per sample (the time embedding `[b, d]`), so their matmul is
too small for FP8 to speed up, and their outputs scale and gate every token of the block. The input and output
projections, the time and text embeddings and the norms are outside the blocks and stay as they are.

`torch._scaled_mm` also requires the inner dimension of each matmul to be a multiple of 16; in the weight gradient
that is the number of tokens (batch x frames), which varies with every speech batch, so the layers pad the inner
dimension with zeros where needed (torchao's `pad_inner_dim`). Apply before `apply_compile`, as torchao advises:
its casts to FP8 are then fused into the blocks' compiled kernels instead of each being a pass of its own.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch
from torch import nn

from f5lite.models.build import backbone_blocks
from f5lite.models.layers import AdaLayerNorm, AdaLayerNormFinal

FP8_MIN_CAPABILITY = (8, 9)
"""The oldest CUDA compute capability with FP8 tensor cores (Ada; Hopper is 9.0, Blackwell 10.0)."""

FP8_ALIGN = 16
"""`torch._scaled_mm` takes only matrices whose trailing sizes (a weight's both sizes) are multiples of this."""

_NEEDS_GPU = (
    "perf.fp8=true needs a CUDA GPU with FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, Blackwell)"
)
_NEEDS_TORCHAO = "perf.fp8=true needs torchao: pip install 'f5lite[fp8]'"


def check_fp8(device: torch.device) -> None:
    """Refuse FP8 training where it cannot run, in one line, before any work.

    `perf.precision=bf16`, which it also needs, is checked with the config (`PerfConfig`).

    Args:
        device: where the run trains.

    Raises:
        ValueError: the device is not an NVIDIA CUDA GPU, its compute capability is below 8.9, or torchao is not
            installed.
    """
    if device.type != "cuda":
        raise ValueError(f"{_NEEDS_GPU}; this run is on {device.type}")
    if torch.version.hip is not None:
        # ROCm reports its own architecture numbers through the same call (an MI250 without FP8 says 9.0).
        raise ValueError(f"{_NEEDS_GPU}; this is a ROCm GPU ({torch.cuda.get_device_name(device)}), not supported")
    capability = torch.cuda.get_device_capability(device)
    if capability < FP8_MIN_CAPABILITY:
        name = torch.cuda.get_device_name(device)
        raise ValueError(f"{_NEEDS_GPU}; {name} has compute capability {capability[0]}.{capability[1]}")
    # Looked up, not imported: torchao's import logs a warning, and a refusal is one line.
    if importlib.util.find_spec("torchao") is None:
        raise ValueError(_NEEDS_TORCHAO)


def fp8_linears(backbone: nn.Module) -> list[str]:
    """The names of the Linear layers `apply_fp8` converts: those of the blocks that FP8 can and should run.

    Args:
        backbone: a DiT, MMDiT or UNetT (anything with a `blocks` ModuleList), or a student of one.

    Returns:
        Module names relative to `backbone` (e.g. `transformer_blocks.0.attn.to_q`), in module order.
    """
    blocks = backbone_blocks(backbone)
    # AdaLN modulations take the time embedding, one row per sample: nothing for FP8 to speed up (module docstring).
    time_fed = {id(m.linear) for m in blocks.modules() if isinstance(m, AdaLayerNorm | AdaLayerNormFinal)}
    in_blocks = {id(m) for m in blocks.modules()}
    return [
        name
        for name, m in backbone.named_modules()
        # `type() is`, not isinstance: a layer converted earlier (a Float8Linear) is not converted again.
        if type(m) is nn.Linear
        and id(m) in in_blocks
        and id(m) not in time_fed
        and m.in_features % FP8_ALIGN == 0
        and m.out_features % FP8_ALIGN == 0
    ]


def _torchao_float8() -> Any:
    try:
        import torchao.float8
    except ImportError:
        raise ValueError(_NEEDS_TORCHAO) from None
    return torchao.float8


def apply_fp8(backbone: nn.Module, *, emulate: bool = False) -> list[str]:
    """Convert the Linears `fp8_linears` names to torchao's `Float8Linear`, in place; keys and dtypes do not change.

    Run the converted backbone under bf16 autocast. Inputs `[..., in]` and outputs `[..., out]` of each layer keep
    their shapes; only the matmuls run in FP8.

    Args:
        backbone: a DiT, MMDiT or UNetT, or a student of one.
        emulate: compute the FP8 matmuls in float32 from the FP8-rounded values (for tests without an FP8 GPU).

    Returns:
        The names of the converted layers, relative to `backbone`.

    Raises:
        ValueError: torchao is not installed.
    """
    float8 = _torchao_float8()
    names = fp8_linears(backbone)
    chosen = {id(backbone.get_submodule(name)) for name in names}
    # pad_inner_dim: the weight gradient's inner dimension is the token count, which no batch promises to align.
    config = float8.Float8LinearConfig(emulate=emulate, pad_inner_dim=True)
    float8.convert_to_float8_training(backbone, module_filter_fn=lambda m, _: id(m) in chosen, config=config)
    return names

"""Velocity networks (DiT, MMDiT, UNetT), the flow objective (CFM), checkpoint I/O, outside-applied optimizations.

The networks implement `Backbone`, the contract the sampler samples from; it is defined in `f5lite.sampling.backbone`
(the sampler's layer, below this one) and exported here too.

Optimizations are applied in this order, each in place and without changing state-dict keys:
`apply_dropout` (the dropout kernel), `apply_packing` (a DiT's masked batches packed), `apply_ac` (activation checkpointing), `apply_fp8` (FP8 matmuls in the blocks), then `apply_compile` (per-block `torch.compile`), then data parallelism.
For sampling, `apply_inference_compile` (per-block compile with weight freezing) once the weights are final.
"""

from f5lite.models.ac import AC_MODES, apply_ac
from f5lite.models.build import (
    BACKBONE_CLASSES,
    BACKBONES,
    backbone_kwargs,
    build_backbone,
    build_backbone_from_config,
)
from f5lite.models.cfm import CFM, flow_loss
from f5lite.models.checkpoint import CheckpointError, load_backbone_weights, load_f5tts_state_dict, to_f5tts_layout
from f5lite.models.compile import apply_compile, apply_inference_compile
from f5lite.models.dit import DiT
from f5lite.models.dropout import DROPOUT_KERNELS, apply_dropout, resolve_dropout_kernel
from f5lite.models.fp8 import apply_fp8, check_fp8
from f5lite.models.mmdit import MMDiT
from f5lite.models.packing import apply_packing
from f5lite.models.unett import UNetT
from f5lite.sampling.backbone import Backbone

__all__ = [
    "AC_MODES",
    "BACKBONES",
    "BACKBONE_CLASSES",
    "CFM",
    "DROPOUT_KERNELS",
    "Backbone",
    "CheckpointError",
    "DiT",
    "MMDiT",
    "UNetT",
    "apply_ac",
    "apply_compile",
    "apply_dropout",
    "apply_fp8",
    "apply_inference_compile",
    "apply_packing",
    "backbone_kwargs",
    "build_backbone",
    "build_backbone_from_config",
    "check_fp8",
    "flow_loss",
    "load_backbone_weights",
    "load_f5tts_state_dict",
    "resolve_dropout_kernel",
    "to_f5tts_layout",
]

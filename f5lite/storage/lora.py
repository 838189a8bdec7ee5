"""LoRA adapters on a backbone, through the `peft` library: inject them, and fold them back into plain weights.

peft wraps each targeted linear layer: its weight moves to `<layer>.base_layer.weight` and the adapters live in
`<layer>.lora_A.default.weight` (`[rank, in]`) and `<layer>.lora_B.default.weight` (`[out, rank]`); the layer then
computes `W x + alpha / rank * B A x`. Training keeps (and checkpoints) only the adapters; inference and exports use
the merged weight `W + alpha / rank * B A` under the layer's original key, so nothing downstream needs peft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from f5lite.config import LoraConfig
from f5lite.models import load_backbone_weights


@dataclass(frozen=True)
class LoraSettings:
    """Where adapters go and how they are scaled (the `finetune.lora` config section).

    Attributes:
        rank: adapter rank (> 0).
        alpha: scaling numerator; None means `rank` (scaling 1).
        dropout: dropout on the adapters' input while training.
        target_modules: linear layers that get adapters, by name suffix.
    """

    rank: int
    alpha: float | None = None
    dropout: float = 0.0
    target_modules: Sequence[str] = ("to_q", "to_k", "to_v", "to_out.0", "ff.0.0", "ff.2")

    @classmethod
    def from_config(cls, lora: LoraConfig) -> LoraSettings:
        """The settings of a `finetune.lora` config section (whose rank must be > 0)."""
        return cls(lora.rank, lora.alpha, lora.dropout, tuple(lora.target_modules))

    @property
    def scaling(self) -> float:
        """The factor peft applies to `B @ A`: alpha / rank."""
        return (self.alpha if self.alpha is not None else self.rank) / self.rank


def _peft() -> tuple[Any, Any]:
    try:
        from peft import LoraConfig as PeftLoraConfig
        from peft import inject_adapter_in_model
    except ImportError:
        raise ValueError("finetune.lora needs the peft package: pip install 'f5lite[lora]'") from None
    return PeftLoraConfig, inject_adapter_in_model


def peft_config(settings: LoraSettings) -> Any:
    """The peft `LoraConfig` for these settings."""
    cls, _ = _peft()
    return cls(
        r=settings.rank,
        lora_alpha=settings.alpha if settings.alpha is not None else settings.rank,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
    )


def add_lora(backbone: nn.Module, settings: LoraSettings, also_train: Sequence[str] = ()) -> list[str]:
    """Inject LoRA adapters and freeze everything else.

    Args:
        backbone: the backbone with its pretrained weights (before activation checkpointing and compile).
        settings: rank, alpha, dropout and target modules.
        also_train: parameter names that stay trainable besides the adapters (a grown text table must learn).

    Returns:
        Names of the trainable parameters.

    Raises:
        ValueError: no module matches `target_modules`, or peft is not installed.
    """
    _, inject_adapter_in_model = _peft()
    try:
        inject_adapter_in_model(peft_config(settings), backbone)
    except ValueError as err:
        raise ValueError(f"finetune.lora.target_modules={list(settings.target_modules)}: {err}") from None
    extra = set(also_train)
    for name, param in backbone.named_parameters():
        param.requires_grad_("lora_" in name or name in extra)
    return [name for name, param in backbone.named_parameters() if param.requires_grad]


def merge_lora(state: dict[str, torch.Tensor], scaling: float) -> dict[str, torch.Tensor]:
    """Fold LoRA adapters into plain weights: `W + scaling * B @ A` under the layer's original key.

    Args:
        state: a LoRA-injected backbone's state dict (`x.base_layer.weight`, `x.lora_A.default.weight`, ...).
        scaling: `alpha / rank`.

    Returns:
        A state dict with the backbone's original keys.
    """
    merged: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if ".lora_" in key:
            continue
        if ".base_layer." not in key:
            merged[key] = value
            continue
        prefix, leaf = key.split(".base_layer.")
        if leaf == "weight":
            a, b = state[f"{prefix}.lora_A.default.weight"], state[f"{prefix}.lora_B.default.weight"]
            value = (value.float() + scaling * (b.float() @ a.float())).to(value.dtype)
        merged[f"{prefix}.{leaf}"] = value
    return merged


def merged_weights(
    backbone: nn.Module, base: dict[str, torch.Tensor], adapters: dict[str, torch.Tensor], settings: LoraSettings
) -> dict[str, torch.Tensor]:
    """Plain backbone weights: `base` with the trained `adapters` (and whatever else was trained) folded in.

    Args:
        backbone: a fresh backbone of the architecture (it is modified: adapters are injected into it).
        base: the pretrained weights, plain backbone keys.
        adapters: the trained tensors of a LoRA run, keyed as in the injected backbone
            (`...lora_A.default.weight`, and plain keys such as a grown text table).
        settings: the run's LoRA settings.

    Returns:
        A state dict with the backbone's original keys.

    Raises:
        CheckpointError: `base` does not fit the architecture.
        ValueError: peft is missing, or the adapters do not fit the injected layers.
    """
    load_backbone_weights(backbone, base)
    add_lora(backbone, settings)
    state = backbone.state_dict()
    unknown = sorted(set(adapters) - set(state))
    if unknown:
        raise ValueError(f"the LoRA weights do not fit the model: unexpected {', '.join(unknown[:5])}")
    state.update(adapters)
    return merge_lora(state, settings.scaling)

"""Backbone construction by family name, from keyword arguments or from a `ModelConfig`."""

from __future__ import annotations

from typing import Any, Protocol

from torch import nn

from f5lite.models.dit import DiT
from f5lite.models.mmdit import MMDiT
from f5lite.models.unett import UNetT

BACKBONE_CLASSES: dict[str, type[nn.Module]] = {"dit": DiT, "mmdit": MMDiT, "unett": UNetT}
"""Family name to class."""
BACKBONES = tuple(BACKBONE_CLASSES)
"""The backbone families (`model.backbone` in the configs)."""


class ArchitectureConfig(Protocol):
    """What `backbone_kwargs` reads: a dataclass (a `model` config section) whose other fields are the kwargs."""

    backbone: str
    text_num_embeds: int | None


def build_backbone(name: str, **kwargs: Any) -> nn.Module:
    """Build a backbone with F5-TTS's keyword names.

    Args:
        name: `"dit"`, `"mmdit"` or `"unett"`.
        **kwargs: constructor options, e.g. `dim=1024, depth=22, heads=16, ff_mult=2, text_dim=512,
            conv_layers=4, text_num_embeds=2545`.

    Returns:
        The backbone; `forward(x, cond, text, time, mask=None, drop_audio_cond=False, drop_text=False)` returns
        the velocity `[b, n, mel_dim]`.

    Raises:
        ValueError: unknown family or an option the family does not have.
    """
    cls = BACKBONE_CLASSES.get(name)
    if cls is None:
        raise ValueError(f"backbone {name!r} is not valid; choose one of: {', '.join(BACKBONE_CLASSES)}")
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise ValueError(f"cannot build {name}: {err}") from None


def backbone_blocks(backbone: nn.Module) -> nn.ModuleList:
    """The repeated unit of a backbone, where optimizations are applied.

    Raises:
        TypeError: the module has no `blocks` ModuleList (not a DiT, MMDiT or UNetT).
    """
    blocks = getattr(backbone, "blocks", None)
    if not isinstance(blocks, nn.ModuleList):
        raise TypeError(f"{type(backbone).__name__} has no `blocks` ModuleList; expected a DiT, MMDiT or UNetT")
    return blocks


def backbone_kwargs(cfg: ArchitectureConfig, text_num_embeds: int | None = None) -> dict[str, Any]:
    """The constructor keyword arguments a config describes.

    Args:
        cfg: a `DiTConfig`, `MMDiTConfig` or `UNetTConfig` (the `model` section of a training config).
        text_num_embeds: vocabulary size used when the config leaves it `null` (taken from vocab.txt).

    Raises:
        ValueError: neither the config nor the caller gives the vocabulary size.
    """
    kwargs = {name: value for name, value in vars(cfg).items() if name != "backbone"}
    if kwargs["text_num_embeds"] is None:
        if text_num_embeds is None:
            raise ValueError("model.text_num_embeds is not set; give the vocab size (lines of vocab.txt)")
        kwargs["text_num_embeds"] = text_num_embeds
    return kwargs


def build_backbone_from_config(cfg: ArchitectureConfig, text_num_embeds: int | None = None) -> nn.Module:
    """Build the backbone a config section describes (see `backbone_kwargs`)."""
    return build_backbone(cfg.backbone, **backbone_kwargs(cfg, text_num_embeds))

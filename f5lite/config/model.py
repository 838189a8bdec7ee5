"""Backbone schemas: one dataclass per family (DiT, MMDiT, UNetT), named and defaulted as F5-TTS's constructors.

Field names are F5-TTS's keyword names, so a config section can be passed straight to `build_backbone`. The defaults
are F5-TTS's constructor defaults (F5-TTS has no default `dim`; ours is its released models' 1024). The `model` config
group (`configs/model/*.yaml`) then sets each family's released architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.models.attention import QK_NORMS
from f5lite.models.build import BACKBONES
from f5lite.models.text_embed import TEXT_FITS
from f5lite.models.unett import SKIP_TYPES

# F5-TTS's conv position embedding is a grouped Conv1d with 16 groups in every backbone's input embedding.
_CONV_POS_GROUPS = 16


@dataclass
class ModelConfig:
    """Options shared by every backbone family."""

    backbone: str = "dit"
    """Backbone family: `dit` (F5-TTS), `mmdit` or `unett` (E2-TTS). Chosen with the `model` group (`model=unett`)."""
    dim: int = 1024
    """Width of the transformer (hidden size). Must be divisible by 16 (grouped conv position embedding)."""
    depth: int = 8
    """Number of transformer blocks."""
    heads: int = 8
    """Attention heads per block."""
    dim_head: int = 64
    """Channels per attention head (F5-TTS's released models use 64 with `heads * dim_head == dim`)."""
    dropout: float = 0.1
    """Dropout in attention outputs and feed-forwards during training."""
    ff_mult: int = 4
    """Feed-forward hidden size as a multiple of `dim`."""
    mel_dim: int = 100
    """Mel channels of the audio features (100 for every released model)."""
    text_num_embeds: int | None = None
    """Text vocabulary size (the embedding table has one more row). `null` takes it from the dataset's vocab.txt."""
    text_mask_padding: bool = True
    """Zero the text embeddings at padded positions (F5-TTS v1 behaviour; v0 and E2-TTS used false)."""
    qk_norm: str | None = None
    """Per-head normalization of queries and keys: `null` or `rms_norm`."""
    attn_mask_enabled: bool = False
    """Mask padded frames out of attention. F5-TTS trained every released model without it."""

    def __post_init__(self) -> None:
        check_choice("model.backbone", self.backbone, BACKBONES)
        expected = _FAMILY_OF.get(type(self))
        if expected is not None and self.backbone != expected:
            raise ValueError(
                f"model.backbone={self.backbone!r} does not match the selected model group ({expected}); "
                f"choose the family with model={self.backbone} instead"
            )
        for key in ("dim", "depth", "heads", "dim_head", "ff_mult", "mel_dim"):
            check_at_least(f"model.{key}", getattr(self, key), 1)
        check_at_least("model.text_num_embeds", self.text_num_embeds, 1, allow_none=True)
        check_range("model.dropout", self.dropout, 0.0, 0.99)
        check_choice("model.qk_norm", self.qk_norm, QK_NORMS)
        if self.dim % _CONV_POS_GROUPS:
            raise ValueError(f"model.dim={self.dim} is not valid; it must be divisible by {_CONV_POS_GROUPS}")


@dataclass
class DiTConfig(ModelConfig):
    """F5-TTS's DiT: AdaLN-Zero transformer over concat(noisy mel, masked mel, text embedding)."""

    backbone: str = "dit"
    """Backbone family (fixed to `dit` for this schema)."""
    text_dim: int | None = None
    """Width of the text embedding; `null` means `mel_dim`."""
    conv_layers: int = 0
    """ConvNeXt-V2 blocks refining the text embedding (4 in F5-TTS v1)."""
    pe_attn_head: int | None = None
    """Apply rotary embeddings to the first N heads only (`1` reproduces F5-TTS v0); `null` means all heads."""
    long_skip_connection: bool = False
    """Concatenate the input of the first block to the output of the last (off in every released model)."""
    text_fit: str = "pad"
    """How the text tokens meet the frames: `pad` (F5-TTS: token j on frame j, filler after) or `spread` (each
    token stretched evenly over the utterance, ZipVoice's average upsampling: a rough alignment from the start,
    so a small model speaks far sooner; such a model has no F5-TTS format)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_text_options(self.text_dim, self.conv_layers, self.pe_attn_head, self.heads)
        check_choice("model.text_fit", self.text_fit, TEXT_FITS)


@dataclass
class MMDiTConfig(ModelConfig):
    """F5-TTS's MMDiT: two-stream (audio, text) joint attention as in SD3; the text width is `dim`."""

    backbone: str = "mmdit"
    """Backbone family (fixed to `mmdit` for this schema)."""


@dataclass
class UNetTConfig(ModelConfig):
    """E2-TTS's flat U-Net transformer: RMSNorm pre-norm blocks with skip connections between mirrored halves."""

    backbone: str = "unett"
    """Backbone family (fixed to `unett` for this schema)."""
    text_dim: int | None = None
    """Width of the text embedding; `null` means `mel_dim` (as in E2-TTS Base)."""
    conv_layers: int = 0
    """ConvNeXt-V2 blocks refining the text embedding (0 in E2-TTS)."""
    pe_attn_head: int | None = None
    """Apply rotary embeddings to the first N heads only (E2-TTS Base uses 1); `null` means all heads."""
    skip_connect_type: str = "concat"
    """How the second half takes the mirrored skip: `concat` (then a linear), `add`, or `none`."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_text_options(self.text_dim, self.conv_layers, self.pe_attn_head, self.heads)
        if self.depth % 2:
            raise ValueError(f"model.depth={self.depth} is not valid; UNetT needs an even depth (mirrored halves)")
        check_choice("model.skip_connect_type", self.skip_connect_type, SKIP_TYPES)


MODEL_SCHEMAS: dict[str, type[ModelConfig]] = {"dit": DiTConfig, "mmdit": MMDiTConfig, "unett": UNetTConfig}
"""The schema of each backbone family (`f5lite.models.BACKBONES`); each also has a `configs/model/<name>.yaml`."""
_FAMILY_OF: dict[type, str] = {schema: name for name, schema in MODEL_SCHEMAS.items()}


def _check_text_options(text_dim: int | None, conv_layers: int, pe_attn_head: int | None, heads: int) -> None:
    check_at_least("model.text_dim", text_dim, 1, allow_none=True)
    check_at_least("model.conv_layers", conv_layers, 0)
    if pe_attn_head is not None:
        check_range("model.pe_attn_head", pe_attn_head, 1, heads)

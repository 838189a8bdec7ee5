"""Starting from pretrained weights: architecture guard, vocabulary growth, and LoRA adapters.

Fine-tuning F5-TTS's released models goes wrong in known ways, each handled here:

- a recipe that does not match the checkpoint: refused with the dimension that differs (`model.dim: checkpoint
  1024, config 768`), before any key-by-key listing;
- a dataset with characters the pretrained vocab lacks: `f5lite-prepare --vocab PRETRAINED` appends them (old ids
  unchanged), and the text-embedding table grows here by as many rows, drawn at the trained rows' per-channel mean
  and standard deviation instead of N(0, 1);
- LoRA (`finetune.lora.rank`): peft's adapters are injected into the chosen linear layers; only they (and the
  text-embedding table, when the vocab grew, since new rows must learn) are trained, checkpointed and averaged.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn

from f5lite.config import LoraConfig, ModelConfig, TrainConfig
from f5lite.models import CheckpointError, load_backbone_weights, load_f5tts_state_dict
from f5lite.models.checkpoint import PREFIX
from f5lite.pretrained import CONFIG_FILE as EXPORT_CONFIG
from f5lite.pretrained import VOCAB_FILE as EXPORT_VOCAB
from f5lite.pretrained import WEIGHTS_FILE as EXPORT_WEIGHTS
from f5lite.text import Vocab, load_vocab

TEXT_TABLE = "text_embed.text_embed.weight"
"""The text-embedding table's key (without the `transformer.` prefix); row 0 is the filler token."""


def read_init_weights(path: str | Path, use_ema: bool) -> tuple[dict[str, torch.Tensor], Path | None]:
    """Bare backbone weights and the vocab file next to them.

    Args:
        path: an official `.safetensors` / `.pt`, or an f5lite export directory.
        use_ema: for official checkpoints, take the EMA weights.

    Returns:
        `(state dict without the transformer. prefix, the export's vocab.txt or None)`.

    Raises:
        ValueError: a missing or unreadable file.
    """
    source = Path(path)
    if source.is_dir():
        if not (source / EXPORT_CONFIG).is_file():
            raise ValueError(f"init.weights={str(source)!r} is a directory but not an f5lite export (no config.json)")
        raw = load_file(source / EXPORT_WEIGHTS)
        vocab = source / EXPORT_VOCAB
        return _bare(raw), vocab if vocab.is_file() else None
    try:
        return _bare(load_f5tts_state_dict(source, use_ema=use_ema)), None
    except CheckpointError as err:
        raise ValueError(f"init.weights: {err}") from None


def _bare(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k[len(PREFIX) :] if k.startswith(PREFIX) else k: v for k, v in state.items()}


def _count(state: dict[str, torch.Tensor], pattern: str) -> int:
    found = {m.group(1) for k in state if (m := re.match(pattern, k))}
    return len(found)


def architecture_of(state: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The architecture fields a backbone state dict reveals (those it cannot tell are left out).

    `heads x dim_head` is the attention width (the rows of `to_q`); `qk_norm` and `long_skip_connection` are told
    by whether their weights exist.
    """
    arch: dict[str, Any] = {}
    if "proj_out.weight" in state:
        arch["mel_dim"], arch["dim"] = tuple(state["proj_out.weight"].shape)
    blocks = _count(state, r"(?:transformer_blocks|layers)\.(\d+)\.")
    if blocks:
        arch["depth"] = blocks
    if TEXT_TABLE in state and "input_embed.proj.weight" in state:
        arch["text_dim"] = state[TEXT_TABLE].shape[1]
    arch["conv_layers"] = _count(state, r"text_embed\.text_blocks\.(\d+)\.")
    # The audio stream's feed-forward (DiT `ff.ff.0.0`, MMDiT `ff_x.ff.0.0`, UNetT `layers.i.4.ff.0.0`).
    ff = next((v for k, v in state.items() if k.endswith(".ff.0.0.weight") and "ff_c." not in k), None)
    if ff is not None and "dim" in arch:
        arch["ff_mult"] = ff.shape[0] / arch["dim"]
    to_q = next((v for k, v in state.items() if k.endswith(".to_q.weight")), None)
    if to_q is not None:
        arch["heads x dim_head"] = to_q.shape[0]
    arch["qk_norm"] = "set" if any(k.endswith(".q_norm.weight") for k in state) else "none"
    arch["long_skip_connection"] = "long_skip_connection.weight" in state
    return arch


def check_architecture(model_cfg: ModelConfig, model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Refuse weights of another architecture, naming the dimension that differs.

    Raises:
        ValueError: e.g. `init.weights has another architecture than the config: model.depth: checkpoint 22,
            config 18`.
    """
    have, want = architecture_of(state), architecture_of(model.state_dict())
    diffs = [f"model.{k}: checkpoint {have[k]}, config {want[k]}" for k in want if k in have and have[k] != want[k]]
    if ("transformer_blocks.0.attn_norm_x.linear.weight" in state) != (
        "transformer_blocks.0.attn_norm_x.linear.weight" in model.state_dict()
    ) or any(k.startswith("layers.") for k in state) != any(k.startswith("layers.") for k in model.state_dict()):
        diffs.insert(0, f"model.backbone: the checkpoint is not a {model_cfg.backbone}")
    if diffs:
        raise ValueError("init.weights has another architecture than the config: " + "; ".join(diffs))


def grow_text_table(table: torch.Tensor, rows: int, generator: torch.Generator) -> torch.Tensor:
    """Append rows to a text-embedding table at the scale of its trained rows.

    Args:
        table: `[v0 + 1, td]`, row 0 the filler token.
        rows: the new row count (>= `v0 + 1`).
        generator: for the new rows.

    Returns:
        `[rows, td]`: the old rows unchanged, the new ones drawn from N(mean, std) of rows 1.. per channel.
    """
    trained = table[1:].float() if table.shape[0] > 2 else table.float()
    mean, std = trained.mean(dim=0), trained.std(dim=0)
    extra = torch.randn(rows - table.shape[0], table.shape[1], generator=generator) * std + mean
    return torch.cat((table, extra.to(table.dtype)))


def init_from_pretrained(cfg: TrainConfig, backbone: nn.Module, data_vocab: Vocab | None) -> int:
    """Load `init.weights` into a freshly built backbone, growing the text table for an extended vocab.

    Args:
        cfg: the run's config (`init`, `model`, `seed`).
        backbone: built for the training data's vocab size.
        data_vocab: the training data's vocab (None for the byte tokenizer).

    Returns:
        How many text-embedding rows were added (0 when the vocab did not grow).

    Raises:
        ValueError: unreadable weights, another architecture, or a data vocab that does not extend the pretrained.
    """
    assert cfg.init.weights is not None
    state, export_vocab = read_init_weights(cfg.init.weights, cfg.init.use_ema)
    check_architecture(cfg.model, backbone, state)
    vocab_path = cfg.init.vocab or export_vocab
    added = 0
    if data_vocab is not None:
        if vocab_path is None:
            raise ValueError("init.vocab is not set: give the vocab.txt that goes with init.weights")
        pretrained = load_vocab(vocab_path)
        if data_vocab.tokens[: len(pretrained)] != pretrained.tokens:
            raise ValueError(
                f"the training data's vocab does not extend {vocab_path} (old ids would move); prepare the data with "
                f"f5lite-prepare ... --vocab {vocab_path}"
            )
        table = state[TEXT_TABLE]
        if table.shape[0] != len(pretrained) + 1:
            raise ValueError(
                f"init.vocab={str(vocab_path)!r} has {len(pretrained)} tokens but the weights' text table has "
                f"{table.shape[0] - 1}; give the vocab.txt released with these weights"
            )
        added = len(data_vocab) - len(pretrained)
        if added:
            generator = torch.Generator().manual_seed(cfg.seed)
            state[TEXT_TABLE] = grow_text_table(table, len(data_vocab) + 1, generator)
    try:
        load_backbone_weights(backbone, state)
    except CheckpointError as err:
        raise ValueError(f"init.weights: {err}") from None
    return added


def add_lora(backbone: nn.Module, lora: LoraConfig, train_text_table: bool) -> list[str]:
    """Inject LoRA adapters (peft) and freeze everything else.

    Args:
        backbone: the backbone with its pretrained weights (before activation checkpointing and compile).
        lora: rank, alpha, dropout and target modules.
        train_text_table: keep the text-embedding table trainable (new vocab rows must learn).

    Returns:
        Names of the trainable parameters.

    Raises:
        ValueError: no module matches `target_modules`.
    """
    _, inject_adapter_in_model = _peft()
    try:
        inject_adapter_in_model(peft_config(lora), backbone)
    except ValueError as err:
        raise ValueError(f"finetune.lora.target_modules={list(lora.target_modules)}: {err}") from None
    for name, param in backbone.named_parameters():
        param.requires_grad_("lora_" in name or (train_text_table and name == TEXT_TABLE))
    return [name for name, param in backbone.named_parameters() if param.requires_grad]


def _peft() -> tuple[Any, Any]:
    try:
        from peft import LoraConfig as PeftLoraConfig
        from peft import inject_adapter_in_model
    except ImportError:
        raise ValueError("finetune.lora needs the peft package: pip install 'f5lite[lora]'") from None
    return PeftLoraConfig, inject_adapter_in_model


def peft_config(lora: LoraConfig) -> Any:
    """The peft `LoraConfig` for these settings."""
    cls, _ = _peft()
    return cls(
        r=lora.rank,
        lora_alpha=lora.alpha if lora.alpha is not None else lora.rank,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
    )


def lora_scaling(lora: LoraConfig) -> float:
    """The factor peft applies to `B @ A` (alpha / rank)."""
    return (lora.alpha if lora.alpha is not None else lora.rank) / lora.rank


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

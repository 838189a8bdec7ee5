"""Loading a model for inference: an f5lite export directory, or an official F5-TTS checkpoint with a recipe.

An official `.safetensors` / `.pt` holds only weights, so the architecture comes from a recipe (`dit_base` for
F5-TTS v1 Base, `unett_base` for E2-TTS Base, ...), which also names the tokenizer and mel type, and the token
table from the `vocab.txt` released with the weights.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from f5lite.config.compose import compose_config
from f5lite.config.infer_schema import DEVICE_PATTERN
from f5lite.models import CheckpointError, build_backbone_from_config, load_backbone_weights, load_f5tts_state_dict
from f5lite.models.checkpoint import PREFIX
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.pretrained import CONFIG_FILE, load_pretrained
from f5lite.text import TextEncoder, load_vocab
from f5lite.text.tokenizers import VOCAB_TOKENIZERS

CHECKPOINT_SUFFIXES = (".safetensors", ".pt")
"""File types read as official F5-TTS checkpoints."""

_TEXT_TABLE = PREFIX + "text_embed.text_embed.weight"


@dataclass(frozen=True)
class LoadedModel:
    """A backbone ready for `f5lite.sample`, and how to feed it.

    Attributes:
        backbone: in eval mode, on the requested device and dtype.
        encoder: turns text into the ids the backbone was trained on.
        mel_type: the mel convention of its audio features (`vocos` or `bigvgan`).
    """

    backbone: nn.Module
    encoder: TextEncoder
    mel_type: str


def resolve_device(device: str | torch.device) -> torch.device:
    """Turn `auto`, `cpu`, `cuda` or `cuda:N` into a usable device.

    Raises:
        ValueError: an unknown name, or CUDA asked for but not available.
    """
    if isinstance(device, torch.device):
        return device
    if not DEVICE_PATTERN.fullmatch(device):
        raise ValueError(f"device={device!r} is not valid; use auto, cpu, cuda or cuda:N")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} is not available: this machine has no usable CUDA device")
    return torch.device(device)


def load_model(
    path: str | os.PathLike[str],
    *,
    recipe: str | None = None,
    vocab: str | os.PathLike[str] | None = None,
    device: str | torch.device = "cpu",
    dtype: str = "fp32",
) -> LoadedModel:
    """Load a backbone and its text encoder.

    Args:
        path: an f5lite export directory (see `f5lite.pretrained`), a training run directory (the EMA weights of
            its newest intact checkpoint), or an official F5-TTS `.safetensors` / `.pt`.
        recipe: for a checkpoint file, the recipe with its architecture (e.g. `dit_base`); not for a directory.
        vocab: for a checkpoint file, its `vocab.txt` (unless the recipe's tokenizer is `byte`); not for a
            directory, which has its own.
        device: `auto`, `cpu`, `cuda` or `cuda:N`.
        dtype: dtype of the backbone's weights: `fp32`, `bf16` or `fp16`.

    Returns:
        The loaded model.

    Raises:
        ValueError: a missing or unreadable path, a missing or superfluous recipe or vocab, weights that do not
            fit the recipe, or a vocab whose size differs from the weights' text embedding. One line each.
        ImportError: the pinyin tokenizer without the `zh` extra.
    """
    if dtype not in WEIGHT_DTYPES:
        raise ValueError(f"dtype={dtype!r} is not valid; choose one of: {', '.join(WEIGHT_DTYPES)}")
    target = resolve_device(device)
    source = Path(path)
    from f5lite.train.export import is_run_dir, load_run_model  # the trainer's modules only when needed

    if source.is_dir() and is_run_dir(source):
        if recipe is not None or vocab is not None:
            raise ValueError(f"{source} is a training run, which has its own architecture and vocab: drop recipe/vocab")
        backbone, run_cfg, run_vocab, _ = load_run_model(source)
        encoder = TextEncoder(run_cfg.data.tokenizer, run_vocab)
        mel_type = run_cfg.data.mel_type
    elif source.is_dir():
        if not (source / CONFIG_FILE).is_file():
            raise ValueError(
                f"{source} is neither an f5lite export directory (no {CONFIG_FILE}) nor a training run directory "
                "(no config.yaml and checkpoints/)"
            )
        if recipe is not None or vocab is not None:
            raise ValueError(
                f"{source} is an f5lite export, which has its own architecture and vocab: drop recipe/vocab"
            )
        backbone, info = load_pretrained(source)
        encoder = TextEncoder(info.tokenizer, info.vocab)
        mel_type = info.mel_type
    elif source.is_file() and source.suffix in CHECKPOINT_SUFFIXES:
        backbone, encoder, mel_type = _load_checkpoint(source, recipe, vocab)
    elif source.exists():
        raise ValueError(f"model {source} is neither an f5lite export directory nor a .safetensors/.pt checkpoint")
    else:
        raise ValueError(f"model {source} does not exist")
    return LoadedModel(backbone.to(device=target, dtype=WEIGHT_DTYPES[dtype]).eval(), encoder, mel_type)


def _load_checkpoint(
    path: Path, recipe: str | None, vocab_path: str | os.PathLike[str] | None
) -> tuple[nn.Module, TextEncoder, str]:
    if recipe is None:
        raise ValueError(
            f"{path.name} holds only weights: give the recipe of its architecture, e.g. recipe=dit_base "
            "(F5-TTS v1 Base) or recipe=unett_base (E2-TTS Base)"
        )
    cfg = compose_config([f"+recipe={recipe}"])
    tokenizer = cfg.data.tokenizer
    if tokenizer in VOCAB_TOKENIZERS and vocab_path is None:
        raise ValueError(
            f"recipe {recipe} uses the {tokenizer} tokenizer: give the vocab.txt released with the weights"
        )
    encoder = TextEncoder(tokenizer, None if vocab_path is None else load_vocab(vocab_path))
    state = load_f5tts_state_dict(path)
    table = state.get(_TEXT_TABLE)
    if table is not None and table.shape[0] != encoder.num_embeds + 1:
        raise ValueError(
            f"the vocab does not match the weights: {vocab_path or 'the byte tokenizer'} has {encoder.num_embeds} "
            f"tokens but {path.name} was trained with {table.shape[0] - 1}; use the vocab.txt released with it"
        )
    backbone = build_backbone_from_config(cfg.model, encoder.num_embeds)
    try:
        load_backbone_weights(backbone, state)
    except CheckpointError as err:
        raise ValueError(f"{path.name} does not fit recipe {recipe}: {err}") from None
    return backbone, encoder, cfg.data.mel_type

"""Loading a model for inference: any model source (see `f5lite.storage.model_sources`), on a device and in a dtype.

A training run directory, an f5lite export, a LoRA adapter export, or an official F5-TTS checkpoint with a recipe
(`dit_base` for F5-TTS v1 Base, `unett_base` for E2-TTS Base, ...) and the `vocab.txt` released with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import nn

from f5lite.infer.config import DEVICE_PATTERN
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.storage.duration_files import LoadedDuration
from f5lite.storage.model_sources import load_source
from f5lite.text import TextEncoder


@dataclass(frozen=True)
class LoadedModel:
    """A backbone ready for `f5lite.sample`, and how to feed it.

    Attributes:
        backbone: in eval mode, on the requested device and dtype.
        encoder: turns text into the ids the backbone was trained on.
        mel_type: the mel convention of its audio features (`vocos` or `bigvgan`).
        duration: the duration predictor that came with it (on the same device, float32), or None.
    """

    backbone: nn.Module
    encoder: TextEncoder
    mel_type: str
    duration: LoadedDuration | None = None


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
        path: any model source: an f5lite export directory, a training run directory (the EMA weights of its newest
            intact checkpoint), a LoRA adapter export, or an official F5-TTS `.safetensors` / `.pt`.
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
        ImportError: the pinyin tokenizer without the `zh` extra, the ipa one without the `ipa` extra or espeak-ng.
    """
    if dtype not in WEIGHT_DTYPES:
        raise ValueError(f"dtype={dtype!r} is not valid; choose one of: {', '.join(WEIGHT_DTYPES)}")
    target = resolve_device(device)
    loaded = load_source(path, recipe=recipe, vocab=vocab)
    backbone = loaded.backbone.to(device=target, dtype=WEIGHT_DTYPES[dtype]).eval()
    if loaded.duration is not None:
        loaded.duration.predictor.to(target)
    return LoadedModel(backbone, TextEncoder(loaded.tokenizer, loaded.vocab), loaded.mel_type, loaded.duration)

"""The f5lite export directory: a backbone with everything needed to run it, written atomically.

Layout of a directory written by `save_pretrained`:

```
model.safetensors   backbone weights, keys `transformer.*` (parameters in the export dtype, buffers as they are)
config.json         {"format": "f5lite-pretrained", "format_version": 1, "f5lite_version": "...",
                     "backbone": "dit", "model": {<constructor kwargs, text_num_embeds included>},
                     "tokenizer": "pinyin", "mel_type": "vocos", "dtype": "bf16"}
vocab.txt           the token table, line i = id i (absent for the byte tokenizer)
duration.*          optional: the duration predictor trained with the model (`f5lite.storage.duration_files`)
student.safetensors only for a distilled student (`f5lite.models.distill`): its step and guidance embeddings;
                    config.json then has "distilled": {"sampler_defaults": {"steps": 4, ...}, "trained": {"steps":
                    [2, 4, 8], "guidance": [1.0, 3.0]}}: the settings it samples with unless told otherwise, and
                    the step counts and guidance range it was distilled for
```

A student's backbone weights are in `model.safetensors` under the teacher's names, so the teacher's tools read them.

The directory is written under a temporary name next to the target and renamed into place, so a reader never sees
a half-written export; a previous export at the same path is replaced.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from f5lite.atomic import atomic_directory
from f5lite.audio.mel import MEL_KINDS
from f5lite.config.model import MODEL_SCHEMAS, ModelConfig
from f5lite.models import backbone_kwargs, build_backbone, load_backbone_weights
from f5lite.models.checkpoint import PREFIX
from f5lite.models.distill import STUDENT_PREFIX, StudentBackbone
from f5lite.models.dtypes import WEIGHT_DTYPES
from f5lite.storage.duration_files import LoadedDuration, write_duration_files
from f5lite.text import Vocab, load_vocab, write_vocab
from f5lite.text.tokenizers import check_tokenizer_name, uses_vocab
from f5lite.version import __version__
from f5lite.versioned import read_versioned_json

FORMAT = "f5lite-pretrained"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
STUDENT_FILE = "student.safetensors"


class PretrainedError(ValueError):
    """An export directory that cannot be written or read, or that does not describe its weights."""


@dataclass(frozen=True)
class PretrainedInfo:
    """What an export directory says about its model.

    Attributes:
        model: the architecture (a `DiTConfig`, `MMDiTConfig` or `UNetTConfig`, `text_num_embeds` set).
        tokenizer: `char`, `pinyin` or `byte`.
        mel_type: `vocos` or `bigvgan`.
        vocab: the token table, or None for the byte tokenizer.
        dtype: dtype the weights were saved in (`fp32`, `bf16`, `fp16`).
        f5lite_version: version of f5lite that wrote the directory.
    """

    model: ModelConfig
    tokenizer: str
    mel_type: str
    vocab: Vocab | None
    dtype: str
    f5lite_version: str


def save_pretrained(
    out_dir: str | os.PathLike[str],
    backbone: nn.Module,
    model_cfg: ModelConfig,
    vocab: Vocab | None,
    *,
    tokenizer: str,
    mel_type: str = "vocos",
    dtype: str = "fp32",
    replaceable: Callable[[Path], bool] | None = None,
    duration: LoadedDuration | None = None,
) -> Path:
    """Write an export directory (see the module docstring for the layout).

    Args:
        out_dir: the directory to create, or a previous export to replace.
        backbone: the trained backbone (e.g. the EMA copy).
        model_cfg: its architecture; `text_num_embeds` may be None (taken from the backbone).
        vocab: the token table, None for the byte tokenizer.
        tokenizer: `char`, `pinyin` or `byte`.
        mel_type: `vocos` or `bigvgan`.
        dtype: dtype of the saved parameters: `fp32`, `bf16` or `fp16`.
        replaceable: whether an existing non-empty `out_dir` may be replaced; default: when it is an export.
        duration: a duration predictor trained on the same text ids, written beside the model.

    Returns:
        The directory.

    Raises:
        PretrainedError: an unknown tokenizer, mel type or dtype; a vocab missing or given against the tokenizer,
            or of the wrong size; a config that does not describe the backbone; `out_dir` is a file or a
            non-empty directory that is not an export.
    """
    out = Path(out_dir)
    student = backbone if isinstance(backbone, StudentBackbone) else None
    if student is not None:
        backbone = student.backbone
    kwargs = _checked_kwargs(backbone, model_cfg, vocab, tokenizer, mel_type, dtype)
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "f5lite_version": __version__,
        "backbone": model_cfg.backbone,
        "model": kwargs,
        "tokenizer": tokenizer,
        "mel_type": mel_type,
        "dtype": dtype,
    }
    if student is not None:
        config["distilled"] = {"sampler_defaults": student.sampler_defaults, "trained": student.trained}
    params = {name for name, _ in backbone.named_parameters()}
    weights = {
        PREFIX + key: (value.to(WEIGHT_DTYPES[dtype]) if key in params else value).detach().cpu().contiguous().clone()
        for key, value in backbone.state_dict().items()
    }
    try:
        with atomic_directory(out, replaceable or is_export, "an export") as staging:
            save_file(weights, staging / WEIGHTS_FILE, metadata={"format": "pt"})
            (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            if vocab is not None:
                write_vocab(staging / VOCAB_FILE, vocab)
            if student is not None:
                own = {
                    STUDENT_PREFIX + k: v.detach().cpu().contiguous().clone()
                    for k, v in student.step_embed.state_dict().items()
                }
                save_file(own, staging / STUDENT_FILE, metadata={"format": "pt"})
            if duration is not None:
                write_duration_files(staging, duration.predictor, tokenizer, vocab, duration.trained_updates)
    except ValueError as err:
        raise PretrainedError(str(err)) from None
    return out


def load_pretrained(
    directory: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> tuple[nn.Module, PretrainedInfo]:
    """Read an export directory.

    Args:
        directory: a directory written by `save_pretrained`.
        device: where to put the backbone.

    Returns:
        The backbone in eval mode with float32 parameters (holding the saved values), and the directory's
        description.

    Raises:
        PretrainedError: a missing or malformed file, an unknown format version, or weights that do not fit the
            described architecture or vocab.
    """
    root = Path(directory)
    config = read_versioned_json(root, CONFIG_FILE, FORMAT, FORMAT_VERSION, "an f5lite export", PretrainedError)
    try:
        model_cfg = MODEL_SCHEMAS[config["backbone"]](backbone=config["backbone"], **config["model"])
        tokenizer, mel_type, dtype = config["tokenizer"], config["mel_type"], config["dtype"]
        version = str(config["f5lite_version"])
    except (KeyError, TypeError, ValueError) as err:
        raise PretrainedError(f"{root / CONFIG_FILE} does not describe a model: {_reason(err)}") from None
    try:
        _check_names(tokenizer, mel_type, dtype)
        vocab = load_vocab(root / VOCAB_FILE) if uses_vocab(tokenizer) else None
        _check_vocab(vocab, tokenizer, model_cfg.text_num_embeds)
        state = load_file(root / WEIGHTS_FILE)
        backbone: nn.Module = build_backbone(model_cfg.backbone, **backbone_kwargs(model_cfg))
        load_backbone_weights(backbone, state)
        if "distilled" in config:
            backbone = _load_student(root, backbone, config["distilled"])
    except (SafetensorError, OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        raise PretrainedError(f"export {root}: {_reason(err)}") from None
    info = PretrainedInfo(model_cfg, tokenizer, mel_type, vocab, dtype, version)
    return backbone.to(device).eval(), info


def _load_student(root: Path, backbone: nn.Module, distilled: dict[str, Any]) -> StudentBackbone:
    """Wrap a loaded backbone as the distilled student its export describes."""
    student = StudentBackbone(backbone, dict(distilled["sampler_defaults"]), distilled.get("trained"))
    own = load_file(root / STUDENT_FILE)
    bare = {k[len(STUDENT_PREFIX) :]: v for k, v in own.items() if k.startswith(STUDENT_PREFIX)}
    student.step_embed.load_state_dict(bare, strict=True)
    return student


def _checked_kwargs(
    backbone: nn.Module, model_cfg: ModelConfig, vocab: Vocab | None, tokenizer: str, mel_type: str, dtype: str
) -> dict[str, Any]:
    """The constructor kwargs to record, after checking that names, vocab, config and backbone agree."""
    _check_names(tokenizer, mel_type, dtype)
    num_embeds = int(getattr(backbone, "text_num_embeds", -1))
    _check_vocab(vocab, tokenizer, num_embeds)
    kwargs = backbone_kwargs(model_cfg, num_embeds)
    # Build the described architecture without allocating it, and compare every tensor's name and shape.
    with torch.device("meta"):
        described = build_backbone(model_cfg.backbone, **kwargs).state_dict()
    actual = backbone.state_dict()
    differing = sorted(k for k in described.keys() ^ actual.keys())
    differing += sorted(k for k in described.keys() & actual.keys() if described[k].shape != actual[k].shape)
    if differing:
        listed = ", ".join(differing[:5]) + (f" and {len(differing) - 5} more" if len(differing) > 5 else "")
        raise PretrainedError(f"the model config does not describe the backbone (tensors differing: {listed})")
    return kwargs


def _check_names(tokenizer: str, mel_type: str, dtype: str) -> None:
    try:
        check_tokenizer_name(tokenizer)
    except ValueError as err:
        raise PretrainedError(str(err)) from None
    for name, value, allowed in (
        ("mel_type", mel_type, MEL_KINDS),
        ("dtype", dtype, tuple(WEIGHT_DTYPES)),
    ):
        if value not in allowed:
            raise PretrainedError(f"{name}={value!r} is not valid; choose one of: {', '.join(allowed)}")


def _check_vocab(vocab: Vocab | None, tokenizer: str, num_embeds: int | None) -> None:
    if (vocab is None) == uses_vocab(tokenizer):
        needs = "needs a vocab" if vocab is None else "takes no vocab"
        raise PretrainedError(f"the {tokenizer!r} tokenizer {needs}")
    if vocab is not None and len(vocab) != num_embeds:
        raise PretrainedError(f"the vocab has {len(vocab)} tokens but the model embeds {num_embeds}")


def is_export(directory: Path) -> bool:
    """Whether `directory` holds an f5lite export (so a new export may replace it)."""
    try:
        read_versioned_json(directory, CONFIG_FILE, FORMAT, FORMAT_VERSION, "an f5lite export", PretrainedError)
    except PretrainedError:
        return False
    return True


def _reason(err: Exception) -> str:
    if isinstance(err, KeyError):
        return f"missing key {err}"
    return str(err)

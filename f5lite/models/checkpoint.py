"""Reading official F5-TTS / E2-TTS checkpoints and loading weights into a backbone with clear errors.

F5-TTS stores models as a CFM whose backbone is `transformer`, usually inside an EMA wrapper: released
`.safetensors` hold `ema_model.transformer.*` plus EMA bookkeeping (`initted`, `step`); training `.pt` files hold
`ema_model_state_dict` and `model_state_dict`. `torch.compile` and DDP add `_orig_mod.` and `module.` prefixes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

PREFIX = "transformer."
"""Key prefix of a backbone inside an F5-TTS CFM state dict."""
_EMA_PREFIX = "ema_model."
_WRAPPER_PREFIXES = ("_orig_mod.", "module.")
_BOOKKEEPING = {"initted", "step", "update"}
# Mel front-end buffers that old F5-TTS checkpoints (before commit 305e3ea) carried inside the CFM.
_LEGACY_MEL_KEYS = {"mel_spec.mel_stft.mel_scale.fb", "mel_spec.mel_stft.spectrogram.window"}
_TEXT_TABLE_SUFFIX = "text_embed.text_embed.weight"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or whose weights do not fit the backbone."""


def _strip(key: str, prefixes: tuple[str, ...]) -> str:
    changed = True
    while changed:
        changed = False
        for prefix in prefixes:
            if key.startswith(prefix):
                key, changed = key[len(prefix) :], True
    return key


def _read(path: Path, use_ema: bool) -> Mapping[str, object]:
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if path.suffix == ".safetensors":
        try:
            return load_file(path)
        except (SafetensorError, OSError) as err:
            raise CheckpointError(f"checkpoint {path} is not a readable .safetensors file: {err}") from None
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch.load raises many types (pickle, zip, unsafe-global) for one cause: bad file
        if "Weights only load failed" in str(err):
            reason = "it holds Python objects other than tensors, which are not loaded (weights_only=True)"
        else:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"checkpoint {path} is not a readable torch file: {reason}") from None
    if not isinstance(raw, Mapping):
        raise CheckpointError(f"checkpoint {path} holds a {type(raw).__name__}, not a state dict")
    wanted = "ema_model_state_dict" if use_ema else "model_state_dict"
    if wanted in raw:
        inner = raw[wanted]
        if not isinstance(inner, Mapping):
            raise CheckpointError(f"checkpoint {path}: {wanted} is not a state dict")
        return inner
    if any(k in raw for k in ("ema_model_state_dict", "model_state_dict")):
        raise CheckpointError(f"checkpoint {path} has no {wanted}; try use_ema={not use_ema}")
    return raw


def load_f5tts_state_dict(path: str | Path, use_ema: bool = True) -> dict[str, torch.Tensor]:
    """Read an official F5-TTS / E2-TTS checkpoint as a CFM state dict with `transformer.*` keys.

    Follows F5-TTS's own loading rules: `.safetensors` is the EMA dict; `.pt` gives `ema_model_state_dict`
    (or `model_state_dict` with `use_ema=False`) and is read with `weights_only=True`. The `ema_model.`,
    `_orig_mod.` and `module.` prefixes are stripped; EMA bookkeeping (`initted`, `step`, `update`) and the legacy
    mel buffers are dropped. A bare backbone state dict (no `transformer.` prefix) gets the prefix added.

    Args:
        path: a `.safetensors` or `.pt` file.
        use_ema: take the EMA weights (what every release and F5-TTS inference use).

    Returns:
        `{"transformer.<key>": tensor}`, loadable into a backbone with `load_backbone_weights`.

    Raises:
        CheckpointError: missing or unreadable file, or no model weights in it.
    """
    path = Path(path)
    out: dict[str, torch.Tensor] = {}
    for key, value in _read(path, use_ema).items():
        key = _strip(key, (_EMA_PREFIX, *_WRAPPER_PREFIXES))
        if key in _BOOKKEEPING or key in _LEGACY_MEL_KEYS or not isinstance(value, torch.Tensor):
            continue
        key = PREFIX + _strip(key[len(PREFIX) :], _WRAPPER_PREFIXES) if key.startswith(PREFIX) else PREFIX + key
        out[key] = value
    if not out:
        raise CheckpointError(f"checkpoint {path} holds no model weights")
    return out


def to_f5tts_layout(state_dict: Mapping[str, torch.Tensor], step: int = 0) -> dict[str, torch.Tensor]:
    """The layout of a released F5-TTS checkpoint: `ema_model.transformer.*` plus `initted` and `step`.

    Args:
        state_dict: backbone weights, with or without the `transformer.` prefix.
        step: EMA step to record (F5-TTS's trainer reads it when fine-tuning from the file).

    Returns:
        A flat dict ready for `safetensors.torch.save_file`; F5-TTS's loaders accept it strictly.
    """
    out = {_EMA_PREFIX + (k if k.startswith(PREFIX) else PREFIX + k): v.contiguous() for k, v in state_dict.items()}
    out["initted"] = torch.tensor(True)
    out["step"] = torch.tensor(step, dtype=torch.int64)
    return out


def load_backbone_weights(backbone: nn.Module, state_dict: Mapping[str, torch.Tensor]) -> None:
    """Load weights strictly, explaining every mismatch.

    Args:
        backbone: the model to fill.
        state_dict: keys with the `transformer.` prefix (from `load_f5tts_state_dict`) or bare backbone keys.

    Raises:
        CheckpointError: listing missing and unexpected keys and shape mismatches; a text-embedding row mismatch
            says the vocab size differs and how to extend the vocab.
    """
    bare = {k[len(PREFIX) :] if k.startswith(PREFIX) else k: v for k, v in state_dict.items()}
    own = backbone.state_dict()
    missing = sorted(set(own) - set(bare))
    unexpected = sorted(set(bare) - set(own))
    shapes = sorted(k for k in set(own) & set(bare) if own[k].shape != bare[k].shape)
    if missing or unexpected or shapes:
        raise CheckpointError(_mismatch_message(own, bare, missing, unexpected, shapes))
    backbone.load_state_dict(bare, strict=True)


def _mismatch_message(
    own: Mapping[str, torch.Tensor],
    given: Mapping[str, torch.Tensor],
    missing: list[str],
    unexpected: list[str],
    shapes: list[str],
) -> str:
    def listed(keys: list[str], limit: int = 8) -> str:
        more = f", ... ({len(keys) - limit} more)" if len(keys) > limit else ""
        return ", ".join(keys[:limit]) + more

    parts = []
    if missing:
        parts.append(f"missing keys: {listed(missing)}")
    if unexpected:
        parts.append(f"unexpected keys: {listed(unexpected)}")
    for key in shapes:
        parts.append(f"{key} has shape {tuple(given[key].shape)} in the checkpoint, {tuple(own[key].shape)} here")
    if _TEXT_TABLE_SUFFIX in shapes:
        rows_ckpt, rows_model = given[_TEXT_TABLE_SUFFIX].shape[0], own[_TEXT_TABLE_SUFFIX].shape[0]
        parts.append(
            f"the vocab size differs ({rows_ckpt - 1} tokens in the checkpoint, {rows_model - 1} here): use the "
            "checkpoint's vocab.txt, or extend it (new tokens appended at the end) with f5lite-prepare --vocab"
        )
    return "weights do not fit the backbone: " + "; ".join(parts)

"""What the metric backends share: parsing a backend spec, finding a model, importing an optional package, 16 kHz.

A backend spec is `name` or `name:argument`, e.g. "pocketsphinx" or "whisper:openai/whisper-large-v3". Model
arguments are a local directory (offline) or a hub id / model name that the backend's own package downloads and
caches (online, or offline from its cache).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor

from f5lite.audio.resample import resample as resample_wave

EVAL_EXTRA = "pip install 'f5lite[eval]'"
"""The install hint for every package of the `eval` extra."""

ASR_RATE = 16000
"""Every speech model used here (ASR, speaker, MOS) takes 16 kHz audio."""

# A hub id ("owner/name") or a bare model name ("large-v3", "paraformer-zh"); anything else is a path.
_MODEL_NAME = re.compile(r"[\w-][\w.-]*(/[\w-][\w.-]*)?")


def parse_spec(
    spec: str, kind: str, backends: Sequence[str], needs_argument: Sequence[str], may_take: Sequence[str] = ()
) -> tuple[str, str]:
    """Split a backend spec into its name and argument, checking both.

    Args:
        spec: "name" or "name:argument".
        kind: what the backend is for, for the messages (e.g. "asr").
        backends: the backend names this kind accepts.
        needs_argument: the backends that take a model argument.
        may_take: the backends whose argument is optional; the others take none.

    Returns:
        (name, argument); the argument is "" for a backend that takes none.

    Raises:
        ValueError: unknown backend, or a missing or unexpected argument.
    """
    name, _, argument = spec.partition(":")
    if name not in backends:
        raise ValueError(f"unknown {kind} backend {spec!r}; choose one of: {', '.join(backends)}")
    if name in needs_argument and not argument:
        raise ValueError(f"{kind} backend {name!r} needs a model: '{name}:<local dir or hub id>'")
    if name not in needs_argument and name not in may_take and argument:
        raise ValueError(f"{kind} backend {name!r} takes no argument, got {spec!r}")
    return name, argument


def model_source(argument: str, backend: str) -> str:
    """Where a backend loads its model from: an existing directory, or a hub id / model name.

    Raises:
        ValueError: `argument` is a file, or looks like a path (not a hub id or a bare name) that does not exist.
    """
    path = Path(argument).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists():
        raise ValueError(f"{backend}: '{argument}' is a file; give the model's directory")
    if _MODEL_NAME.fullmatch(argument):
        return argument
    raise ValueError(f"{backend}: model directory '{argument}' does not exist (give a local directory or a hub id)")


def require(module: str, install: str, user: str) -> ModuleType:
    """Import an optional package, or fail with one line saying how to install it.

    Args:
        module: the module to import.
        install: the install hint, e.g. `EVAL_EXTRA` or "pip install faster-whisper".
        user: who needs it, for the message (e.g. "asr backend 'pocketsphinx'").

    Raises:
        ImportError: the module (or one it imports) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = error.name or module
        raise ImportError(f"{user} needs the Python package '{missing}': {install}") from error


def check_audio(audio: Tensor, sample_rate: int, what: str) -> None:
    """Check that `audio` is a non-empty 1-D waveform with a positive rate.

    Raises:
        ValueError: it is not.
    """
    if audio.dim() != 1 or audio.numel() == 0:
        raise ValueError(f"{what} must be a non-empty 1-D waveform [samples], got shape {tuple(audio.shape)}")
    if sample_rate <= 0:
        raise ValueError(f"{what}: sample rate must be positive, got {sample_rate}")


def resample(
    audio: Tensor, sample_rate: int, target_rate: int, what: str = "audio", *, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Checked `audio` `[samples]` as `dtype` (float32 unless asked) on the CPU at `target_rate`.

    Raises:
        ValueError: `audio` is not a non-empty 1-D waveform, or `sample_rate` is not positive.
    """
    check_audio(audio, sample_rate, what)
    wave = audio.detach().to("cpu", dtype)
    return resample_wave(wave, sample_rate, target_rate)

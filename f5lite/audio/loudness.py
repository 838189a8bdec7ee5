"""F5-TTS's reference-loudness handling for inference.

F5-TTS boosts a quiet reference clip to a target RMS before computing its mel, so the model hears speech at the
loudness it was trained on, and afterwards scales the generated audio back down by the same factor so the output
matches the reference's loudness. Loud references are left alone in both directions.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

TARGET_RMS = 0.1
"""F5-TTS's default target RMS (about -20 dBFS)."""


def normalize_rms(waveform: Tensor, target_rms: float = TARGET_RMS) -> tuple[Tensor, float]:
    """Scale a quiet clip up to `target_rms`; leave a loud or silent one unchanged.

    The RMS is taken over the whole tensor (one clip, as F5-TTS does): `sqrt(mean(waveform ** 2))`. If it is
    below `target_rms` the clip is multiplied by `target_rms / rms`. An all-zero clip has nothing to scale and is
    returned as is.

    Args:
        waveform: a clip of any shape, e.g. `[samples]` or `[1, samples]`, floating point.
        target_rms: the loudness to reach, > 0.

    Returns:
        The (possibly scaled) waveform, same shape and dtype, and the clip's original RMS, to pass to
        `restore_rms`.

    Raises:
        ValueError: `target_rms` is not positive.
    """
    _check_target(target_rms)
    rms = torch.sqrt(torch.mean(torch.square(waveform)))
    original_rms = float(rms)
    if _was_boosted(original_rms, target_rms):
        # F5-TTS's exact expression, so the scaled reference (and its mel) match bit for bit.
        waveform = waveform * target_rms / rms
    return waveform, original_rms


def restore_rms(waveform: Tensor, original_rms: float, target_rms: float = TARGET_RMS) -> Tensor:
    """Undo `normalize_rms` on generated audio: scale by `original_rms / target_rms` if the reference was boosted.

    Args:
        waveform: generated audio of any shape.
        original_rms: the RMS `normalize_rms` returned for the reference clip.
        target_rms: the value given to `normalize_rms`.

    Returns:
        The waveform, scaled down if the reference was quiet, otherwise unchanged.

    Raises:
        ValueError: `target_rms` is not positive.
    """
    _check_target(target_rms)
    if _was_boosted(original_rms, target_rms):
        return waveform * original_rms / target_rms
    return waveform


def _was_boosted(rms: float, target_rms: float) -> bool:
    """Whether `normalize_rms` scaled a clip of this RMS (silence is never scaled: it would divide by zero)."""
    return 0.0 < rms < target_rms


def _check_target(target_rms: float) -> None:
    if not (target_rms > 0 and math.isfinite(target_rms)):
        raise ValueError(f"target_rms must be a positive number, got {target_rms}")

"""How many mel frames to generate: the byte-ratio rule, a predictor's estimate, a fixed length, the lower bound.

F5-TTS has no duration model. It assumes the new text is spoken at the reference's rate in UTF-8 bytes per frame,
so `total = ref_frames + ref_frames / ref_bytes * gen_bytes / speed`, and its sampler raises every duration to at
least one frame more than both the text ids and the reference. A trained predictor (`f5lite.models.duration`)
replaces the byte counts by its learned log-frames of each text (`predicted_duration`); a length the user gives
replaces both (`fixed_duration`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def estimate_duration(ref_frames: int, ref_text: str, gen_text: str, speed: float = 1.0) -> int:
    """Total frames (reference plus generated) for speaking `gen_text` at the reference's rate.

    F5-TTS's inference also forces `speed = 0.3` for texts under 10 bytes; f5lite does not, so that `speed` is the
    only knob and the duration is predictable.

    Args:
        ref_frames: mel frames of the reference audio.
        ref_text: transcript of the reference (as fed to the model).
        gen_text: the text to generate.
        speed: speaking speed factor; 2.0 gives half as many generated frames.

    Returns:
        `ref_frames + int(ref_frames / ref_bytes * gen_bytes / speed)`.

    Raises:
        ValueError: `ref_frames` < 1, an empty `ref_text`, or `speed` <= 0.
    """
    ref_bytes = len(ref_text.encode("utf-8"))
    if ref_frames < 1:
        raise ValueError(f"ref_frames={ref_frames} is not valid; it must be >= 1")
    if ref_bytes == 0:
        raise ValueError("ref_text is empty: the speaking rate is measured from the reference transcript")
    if not speed > 0:
        raise ValueError(f"speed={speed!r} is not valid; it must be > 0")
    gen_bytes = len(gen_text.encode("utf-8"))
    return ref_frames + int(ref_frames / ref_bytes * gen_bytes / speed)


def predicted_duration(ref_frames: int, ref_log_frames: float, gen_log_frames: float, speed: float = 1.0) -> int:
    """Total frames for the generated text at the reference's rate, measured against a predictor's estimates.

    The reference's rate relative to the predictor is `ref_frames / exp(ref_log_frames)`; the generated part lasts
    the predictor's estimate of the new text at that rate: the byte rule with learned lengths in place of bytes.

    Args:
        ref_frames: mel frames of the reference audio.
        ref_log_frames: the predictor's log-frames of the reference transcript.
        gen_log_frames: the predictor's log-frames of the text to generate.
        speed: speaking speed factor; 2.0 gives half as many generated frames.

    Returns:
        `ref_frames + max(1, round(ref_frames * exp(gen_log_frames - ref_log_frames) / speed))`.

    Raises:
        ValueError: `ref_frames` < 1, `speed` <= 0, or a log-frames that is not finite.
    """
    if ref_frames < 1:
        raise ValueError(f"ref_frames={ref_frames} is not valid; it must be >= 1")
    if not speed > 0:
        raise ValueError(f"speed={speed!r} is not valid; it must be > 0")
    if not (math.isfinite(ref_log_frames) and math.isfinite(gen_log_frames)):
        raise ValueError(f"the duration predictor gave a non-finite estimate ({ref_log_frames}, {gen_log_frames})")
    return ref_frames + max(1, round(ref_frames * math.exp(gen_log_frames - ref_log_frames) / speed))


def fixed_duration(ref_frames: int, seconds: float, frame_rate: float) -> int:
    """Total frames for a generated part of a given length in seconds.

    Args:
        ref_frames: mel frames of the reference audio.
        seconds: length of the generated speech (the reference excluded).
        frame_rate: mel frames per second (24000 / 256 for every released F5-TTS model).

    Returns:
        `ref_frames + max(1, round(seconds * frame_rate))`.

    Raises:
        ValueError: `seconds` <= 0 or not finite.
    """
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"duration={seconds!r} seconds is not valid; it must be > 0")
    return ref_frames + max(1, round(seconds * frame_rate))


def effective_durations(duration: Tensor, text: Tensor, ref_lens: Tensor) -> Tensor:
    """F5-TTS's lower bound on each sample's duration: `max(duration, max(text_len, ref_len) + 1)`.

    Args:
        duration: requested total frames `[b]` int64.
        text: ids `[b, nt]` padded with -1.
        ref_lens: reference frames `[b]` int64.

    Returns:
        `[b]` int64.
    """
    text_lens = (text != -1).sum(dim=-1)
    return torch.maximum(torch.maximum(text_lens, ref_lens) + 1, duration)

"""How many mel frames to generate: F5-TTS's byte-ratio estimate, and the lower bound `sample` enforces.

F5-TTS has no duration model. It assumes the new text is spoken at the reference's rate in UTF-8 bytes per frame,
so `total = ref_frames + ref_frames / ref_bytes * gen_bytes / speed`, and its sampler raises every duration to at
least one frame more than both the text ids and the reference.
"""

from __future__ import annotations

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

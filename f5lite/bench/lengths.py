"""Synthetic batches of speech-like lengths for the training benchmarks: what a real batch's padding looks like.

A batch of equal lengths (the GPU benchmark's 32 x 1200 frames) has no padding, so packing (`perf.pack`) cannot
help it. Real batches mix lengths. `speech_batch` draws mel lengths from a log-normal like the utterance durations of
read and found speech corpora (median 6 s, most between 2.5 and 15 s, clipped to 1-20 s; 24 kHz, hop 256) with a
fixed seed, in one of two shapes:

- `bucket`: a length-sorted bucket, as a length-bucketing sampler gives it (F5-TTS's `DynamicBatchSampler` sorts
  the whole dataset; f5lite's windowed batching sorts windows of 256 cuts): 256 draws sorted, a run of neighbours
  taken from a random place. Little padding.
- `shuffled`: utterances in the order a plain shuffled loader gives them. Much padding.

Both fill the batch while its *padded* size (utterances x longest) stays within the frame budget: the same memory
footprint as an equal batch of that many frames, whatever the shape.
"""

from __future__ import annotations

import math
import random

SHAPES = ("bucket", "shuffled")
FRAMES_PER_SECOND = 24_000 / 256
MEDIAN_S, SIGMA, MIN_S, MAX_S = 6.0, 0.45, 1.0, 20.0
WINDOW = 256
"""Utterances sorted together for a `bucket` (f5lite's windowed batching sorts windows of this many cuts)."""
FRAMES_PER_TEXT_TOKEN = 6
"""Mel frames per text token (the GPU benchmark's 1200 frames for 200 tokens)."""


def _draw(rng: random.Random) -> int:
    seconds = min(MAX_S, max(MIN_S, rng.lognormvariate(math.log(MEDIAN_S), SIGMA)))
    return round(seconds * FRAMES_PER_SECOND)


def speech_batch(shape: str, frames: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """Mel and text lengths of one batch whose padded size (count x longest) is at most `frames`.

    Args:
        shape: `bucket` or `shuffled` (see the module docstring).
        frames: The frame budget of the padded batch.
        seed: Seed of the draws (the same seed gives the same batch on every machine: Python's `random`).

    Returns:
        `(mel_lengths, text_lengths)`, at least one utterance (cut to `frames` when even one would not fit).

    Raises:
        ValueError: An unknown shape or a budget under one frame.
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown batch shape {shape!r}; choose from {', '.join(SHAPES)}")
    if frames < 1:
        raise ValueError(f"the frame budget must be at least 1, got {frames}")
    rng = random.Random(seed)
    if shape == "bucket":
        window = sorted(_draw(rng) for _ in range(WINDOW))
        order = window[rng.randrange(WINDOW // 4, WINDOW // 2) :]  # from the middle of the window, upwards
    else:
        order = [_draw(rng) for _ in range(4 * WINDOW)]
    mel: list[int] = []
    for length in order:
        if (len(mel) + 1) * max(mel + [length]) > frames:
            break
        mel.append(length)
    mel = mel or [min(order[0], frames)]
    return mel, [max(1, round(m / FRAMES_PER_TEXT_TOKEN)) for m in mel]


def padding_fraction(mel_lengths: list[int]) -> float:
    """The share of a padded batch's frames that are padding: 1 - sum / (count x longest)."""
    return 1.0 - sum(mel_lengths) / (len(mel_lengths) * max(mel_lengths))

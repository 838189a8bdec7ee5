"""Training settings proposed for this machine: frames per batch from the free memory, and the precision.

On a GPU the batch is sized from its free memory at `FRAMES_PER_GIB` mel frames per GiB: F5-TTS v1 Base fine-tunes
with 9,600 frames per batch on a 24 GB card (`recipes/dit_base_finetune.yaml`, with activation checkpointing), 400
frames per GiB, and the same rate gives about F5-TTS's 38,400 frames on an 80 GB card. Precision is bf16 where the
GPU computes it (Ampere and newer), else fp16. On a CPU, training is for the small recipes (`debug_tiny`, `demo`):
the recipe's own batch is kept unless the free memory is smaller than it needs at the same rate, and the precision is
fp32 (`no`): CPU autocast is slower than float32 on most CPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil
import torch

FRAMES_PER_GIB = 400
"""Mel frames per batch per GiB of free memory (see the module docstring)."""
FRAMES_STEP = 400
"""Proposed batches are a multiple of this."""
MAX_FRAMES = 38_400
"""F5-TTS's own batch per GPU: no larger batch is proposed."""


@dataclass(frozen=True)
class Proposal:
    """Settings proposed for a run.

    Attributes:
        frames_per_gpu: `data.frames_per_gpu`.
        precision: `perf.precision` (`bf16`, `fp16` or `no`).
        reason: one line saying what they were derived from.
    """

    frames_per_gpu: int
    precision: str
    reason: str


def propose(recipe_frames: int) -> Proposal:
    """Settings for this machine.

    Args:
        recipe_frames: the recipe's `data.frames_per_gpu`.

    Returns:
        The proposal.
    """
    if torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        gib = free / 2**30
        frames = max(FRAMES_STEP, min(MAX_FRAMES, int(gib * FRAMES_PER_GIB) // FRAMES_STEP * FRAMES_STEP))
        precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        name = torch.cuda.get_device_name()
        return Proposal(frames, precision, f"{name}: {gib:.1f} GiB free -> {frames} frames, {precision}")
    gib = psutil.virtual_memory().available / 2**30
    room = max(FRAMES_STEP, int(gib * FRAMES_PER_GIB) // FRAMES_STEP * FRAMES_STEP)
    frames = min(recipe_frames, room)
    return Proposal(frames, "no", f"CPU: {gib:.1f} GiB free -> {frames} frames (the recipe's or less), fp32")

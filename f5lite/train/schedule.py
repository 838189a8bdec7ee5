"""Learning-rate schedule: linear warm-up, then linear decay to zero, counted in optimizer updates.

The factor is computed on the device from the device-side count of applied updates, so that a skipped update
(non-finite gradients) does not advance the schedule and nothing has to be read back to the host.
"""

from __future__ import annotations

import torch


def lr_factor(updates: torch.Tensor | int, warmup: int, total: int) -> torch.Tensor:
    """Multiplier of the peak learning rate for the next update.

    Warm-up lasts `min(warmup, total)` updates, so a run shorter than the warm-up is still valid (it never reaches
    the decay); update `u` (0-based) of the warm-up uses `(u + 1) / warmup`. The decay then falls linearly to zero
    at `total`.

    Args:
        updates: updates applied so far (0-d tensor or int).
        warmup: warm-up updates.
        total: updates of the whole run.

    Returns:
        A 0-d float32 tensor in [0, 1], on the device of `updates`.
    """
    u = torch.as_tensor(updates, dtype=torch.float32)
    warm = max(min(warmup, total), 1)
    decay = max(total - warm, 1)
    rising = (u + 1) / warm
    falling = ((total - u) / decay).clamp(min=0.0)
    return torch.where(u < warm, rising, falling.clamp(max=1.0))

"""Training randomness derived from (seed, update, rank, micro-batch): nothing to save for an exact resume.

Every micro-batch reseeds the global generators (dropout) and makes a fresh generator for the flow objective's
draws (noise, time, span, CFG drops) from a counter-based seed. A resumed run therefore draws exactly what the
uninterrupted run drew, and no RNG state goes into checkpoints.
"""

from __future__ import annotations

import numpy as np
import torch


def step_seed(seed: int, update: int, rank: int, micro: int) -> int:
    """A 63-bit seed that changes with each of its inputs (NumPy's SeedSequence hash)."""
    state = np.random.SeedSequence([seed, update, rank, micro]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def seed_step(seed: int, update: int, rank: int, micro: int, device: torch.device) -> torch.Generator:
    """Reseed torch's global generators and return the objective's generator for one micro-batch.

    Args:
        seed: the run's seed.
        update: optimizer updates done.
        rank: process rank.
        micro: micro-batch index within the update (gradient accumulation).
        device: where the objective draws its tensors.

    Returns:
        A generator on `device`.
    """
    value = step_seed(seed, update, rank, micro)
    torch.manual_seed(value)
    generator = torch.Generator(device=device)
    generator.manual_seed(value ^ 0x5DEECE66D)
    return generator

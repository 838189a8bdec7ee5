"""The models and batches the benchmarks share: DiT sizes, the same random weights, the same synthetic batches.

Importing it imports no f5lite module (an F5-TTS process uses it too). `speech_batch` draws mel lengths like read and
found speech (log-normal, median 6 s, clipped to 1-20 s; a fixed seed) within a padded frame budget: `bucket`, a run of
neighbours in a sorted window of 256 draws (length bucketing: little padding), or `shuffled` (much padding).
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

F5TTS_VOCAB_SIZE = 2545
"""Lines of F5-TTS v1 Base's `vocab.txt`: the text-table size of the benchmark models."""
DITS: dict[str, dict[str, int]] = {
    # F5-TTS v1 Base (configs/model/dit.yaml), for `make bench-gpu`.
    "base": {"dim": 1024, "depth": 22, "heads": 16, "dim_head": 64, "ff_mult": 2, "text_dim": 512, "conv_layers": 4},
    # The CPU benchmarks' model (33.4M parameters with the F5-TTS vocab), small enough for a 2-core CPU.
    "mid": {"dim": 512, "depth": 8, "heads": 8, "dim_head": 64, "ff_mult": 2, "text_dim": 256, "conv_layers": 4},
    "small": {"dim": 256, "depth": 4, "heads": 4, "dim_head": 64, "ff_mult": 2, "text_dim": 128, "conv_layers": 2},
    # Tests and rehearsals only.
    "tiny": {"dim": 64, "depth": 2, "heads": 4, "dim_head": 16, "ff_mult": 2, "text_dim": 32, "conv_layers": 1},
}
"""DiT constructor arguments by size."""

SHAPES = ("bucket", "shuffled")
FRAMES_PER_SECOND = 24_000 / 256
FRAMES_PER_TEXT_TOKEN = 6
"""Mel frames per text token of a synthetic batch (1200 frames for 200 tokens)."""


def synthetic_batch(mel_lengths: list[int], text_lengths: list[int], device: torch.device) -> tuple[torch.Tensor, ...]:
    """`(mel [b, n, 100] zero-padded, text ids [b, nt] padded with -1, lens [b])` on `device`, reproducible."""
    g = torch.Generator().manual_seed(0)
    mel = torch.zeros(len(mel_lengths), max(mel_lengths), 100)
    text = torch.full((len(text_lengths), max(text_lengths)), -1, dtype=torch.long)
    for i, (frames, tokens) in enumerate(zip(mel_lengths, text_lengths, strict=True)):
        mel[i, :frames] = torch.randn(frames, 100, generator=g) * 2 - 5  # roughly log-mel values
        text[i, :tokens] = torch.randint(0, F5TTS_VOCAB_SIZE, (tokens,), generator=g)
    return mel.to(device), text.to(device), torch.tensor(mel_lengths, device=device)


def shared_weights(dims: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The random weights every side starts from (F5-TTS's DiT takes the same state dict).

    f5lite's DiT, every parameter N(0, 0.02) after seeding 0, so that no zero-initialized path is idle.
    """
    import f5lite

    torch.manual_seed(0)
    model = f5lite.build_backbone("dit", **dims, text_num_embeds=F5TTS_VOCAB_SIZE)
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.02)
    return model.state_dict()


def speech_batch(shape: str, frames: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """Mel and text lengths of one batch whose padded size is at most `frames`, the same on every machine.

    At least one utterance, cut to `frames` when even one would not fit.

    Raises:
        ValueError: An unknown shape or a budget under one frame.
    """
    if shape not in SHAPES or frames < 1:
        raise ValueError(f"unknown batch shape {shape!r} (choose from {', '.join(SHAPES)}) or budget {frames} < 1")
    rng = random.Random(seed)

    def draw() -> int:
        return round(min(20.0, max(1.0, rng.lognormvariate(math.log(6.0), 0.45))) * FRAMES_PER_SECOND)

    if shape == "bucket":
        window = sorted(draw() for _ in range(256))
        order = window[rng.randrange(256 // 4, 256 // 2) :]  # from the middle of the window, upwards
    else:
        order = [draw() for _ in range(4 * 256)]
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

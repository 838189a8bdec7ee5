"""The model the CPU benchmarks share: a mid-size DiT (33.4M parameters), small enough for a 2-core CPU.

The f5lite benchmarks and the side-by-side comparisons with F5-TTS run the same one.
"""

from __future__ import annotations

from typing import Any

F5TTS_VOCAB_SIZE = 2545
"""Lines of F5-TTS v1 Base's `vocab.txt`: the text-table size of the benchmark models."""

MID_DIT: dict[str, Any] = {
    "dim": 512,
    "depth": 8,
    "heads": 8,
    "dim_head": 64,
    "ff_mult": 2,
    "text_dim": 256,
    "conv_layers": 4,
}
"""DiT constructor arguments of the mid-size model (33.4M parameters with the F5-TTS vocab)."""

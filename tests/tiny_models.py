"""Tiny backbones and batches for CPU tests of `f5lite.models` (random weights, no fixture needed)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

import f5lite

TINY: dict[str, dict[str, Any]] = {
    "dit": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2, "text_dim": 32, "conv_layers": 1},
    "mmdit": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2},
    "unett": {"dim": 64, "depth": 4, "heads": 4, "dim_head": 16, "ff_mult": 2, "pe_attn_head": 1},
}
VOCAB = 40


def tiny_backbone(name: str, seed: int = 0, **overrides: Any) -> nn.Module:
    """A tiny backbone whose zero-initialised layers are re-drawn, so that every path carries signal."""
    torch.manual_seed(seed)
    model = f5lite.build_backbone(name, **{**TINY[name], "text_num_embeds": VOCAB, "dropout": 0.0, **overrides})
    for param in model.parameters():
        nn.init.normal_(param, std=0.1)
    return model


def tiny_batch(b: int = 2, n: int = 48, nt: int = 20, seed: int = 1) -> dict[str, torch.Tensor]:
    """Random inputs: x, cond `[b, n, 100]`, text `[b, nt]` (-1 padded), time `[b]`, mask `[b, n]`."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.linspace(n, n // 2, b).long()
    text = torch.randint(0, VOCAB, (b, nt), generator=g)
    text[1:, nt - 5 :] = -1
    return {
        "x": torch.randn(b, n, 100, generator=g),
        "cond": torch.randn(b, n, 100, generator=g),
        "text": text,
        "time": torch.rand(b, generator=g),
        "mask": torch.arange(n)[None, :] < lens[:, None],
    }

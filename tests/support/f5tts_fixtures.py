"""F5-TTS's tiny checkpoints in `tests/assets/f5tts_compat`: built as our backbones, or fine-tuned from."""

from __future__ import annotations

import json
from pathlib import Path

import torch

import f5lite
from f5lite.models import load_backbone_weights

ASSETS = Path(__file__).parents[1] / "assets" / "f5tts_compat"
FAMILY = {"DiT": "dit", "MMDiT": "mmdit", "UNetT": "unett"}
# dit_tiny's architecture (tests/assets/f5tts_compat/dit_tiny.json) over the debug_tiny recipe.
TINY = ["model.dim=64", "model.depth=4", "model.heads=4", "model.dim_head=16", "model.ff_mult=2", "model.text_dim=32"]
TINY += ["model.conv_layers=2"]


def build_fixture_model(assets: Path, name: str) -> torch.nn.Module:
    """The fixture `name` (`dit_tiny`, `mmdit_tiny`, `unett_tiny`) as our backbone, in eval mode, its weights loaded."""
    meta = json.loads((assets / "f5tts_compat" / f"{name}.json").read_text())
    model = f5lite.build_backbone(FAMILY[meta["backbone_class"]], **meta["backbone_kwargs"]).eval()
    load_backbone_weights(model, f5lite.load_f5tts_state_dict(assets / "f5tts_compat" / f"{name}.safetensors"))
    return model


def overrides(data_dir: Path, run: Path, *extra: str) -> list[str]:
    """A three-update fine-tuning run of `dit_tiny` on `data_dir` (prepared against the fixture's vocab)."""
    return [
        "+recipe=debug_tiny", f"data.dir={data_dir}", f"run_dir={run}", *TINY, "data.num_workers=0",
        f"init.weights={ASSETS / 'dit_tiny.safetensors'}", f"init.vocab={ASSETS / 'vocab.txt'}",
        "optim.max_updates=3", "logger.every=1", "ckpt.every=100", *extra,
    ]  # fmt: skip

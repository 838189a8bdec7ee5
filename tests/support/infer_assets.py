"""A tiny random model as an f5lite export and as an official-layout checkpoint, a reference clip, and a spy on
`sample`, for the inference tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

import f5lite
import f5lite.infer.synthesizer as synthesizer_module
from f5lite.config import compose_config
from f5lite.models import build_backbone_from_config, to_f5tts_layout

ASSETS = Path(__file__).parents[1] / "assets"
VOCAB_FILE = ASSETS / "f5tts_compat" / "vocab.txt"
REF_TEXT = "ABC 12. "  # already prepared, so the expected durations below are easy to compute
GEN_TEXT = "DEAF CAB."

NON_DEFAULT: dict[str, Any] = {
    "steps": 5,
    "method": "midpoint",
    "schedule": "epss",
    "sway": 0.5,
    "cfg_strength": 1.5,
    "cfg_zero_init_steps": 1,
    "cfg_zero_star": True,
    "speed": 1.5,
}
"""Every `SamplerOptions` field with a value that is not its default, so that a setting an entry point drops or
renames shows up as a default in what `sample` receives (a test checks that the keys are all the fields)."""


def make_model_files(root: Path) -> tuple[Path, Path]:
    """Write the `debug_tiny` recipe's DiT with random weights as an export and as an F5-TTS checkpoint."""
    cfg = compose_config(["+recipe=debug_tiny"]).model
    torch.manual_seed(0)
    model = build_backbone_from_config(cfg, 40).eval()
    for param in model.parameters():
        torch.nn.init.normal_(param, std=0.1)
    export = f5lite.save_pretrained(root / "export", model, cfg, f5lite.load_vocab(VOCAB_FILE), tokenizer="char")
    checkpoint = root / "model_100.safetensors"
    save_file(to_f5tts_layout(model.state_dict(), step=100), checkpoint)
    return export, checkpoint


def make_reference(root: Path) -> Path:
    """F5-TTS's synthetic 9984-sample reference clip (40 mel frames), as a float WAV."""
    wave = load_file(ASSETS / "f5tts_compat" / "ref_wav_mel.safetensors")["ref_wav"][0]
    path = root / "ref.wav"
    f5lite.save_audio(path, wave, 24000, subtype="FLOAT")
    return path


def expected_samples(gen_text: str = GEN_TEXT, ref_frames: int = 40, speed: float = 1.0) -> int:
    """Samples of one chunk: generated frames by the byte-ratio rule, minus one frame for Vocos' (n - 1) * hop."""
    generated = int(ref_frames / len(REF_TEXT.encode()) * len(gen_text.encode()) / speed)
    return (generated - 1) * 256


def spy_on_sample(monkeypatch: pytest.MonkeyPatch) -> list[tuple[f5lite.SamplerOptions | None, int | None]]:
    """Record the options and seed of every `sample` call the synthesizer makes; the real `sample` still runs."""
    seen: list[tuple[f5lite.SamplerOptions | None, int | None]] = []
    real = synthesizer_module.sample

    def spy(*args: Any, **kwargs: Any) -> torch.Tensor:
        options = args[4] if len(args) > 4 else kwargs.get("options")
        seen.append((options, kwargs.get("seed")))
        return real(*args, **kwargs)

    monkeypatch.setattr(synthesizer_module, "sample", spy)
    return seen

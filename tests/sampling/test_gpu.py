"""The sampler and the objective on CUDA: F5-TTS's seeded noise, recorded outputs, generator draws, half precision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.golden import assert_golden

import f5lite
import f5lite.sampling.sampler as sampler_module
from f5lite import SamplerOptions
from f5lite.models import load_backbone_weights
from f5lite.models.cfm import draw_flow_randomness

pytestmark = pytest.mark.gpu
FIXTURES = Path(__file__).parents[1] / "assets" / "f5tts_compat"


def fixture_model() -> torch.nn.Module:
    meta = json.loads((FIXTURES / "dit_tiny.json").read_text())
    model = f5lite.build_backbone("dit", **meta["backbone_kwargs"]).eval()
    load_backbone_weights(model, f5lite.load_f5tts_state_dict(FIXTURES / "dit_tiny.safetensors"))
    return model.cuda()


def test_seeded_noise_equals_f5tts_draws_on_cuda():
    # F5-TTS calls torch.manual_seed(seed) then torch.randn on the device, per sample.
    noise = sampler_module.initial_noise(torch.tensor([30, 20], device="cuda"), 100, seed=1234)
    for i, frames in enumerate((30, 20)):
        torch.manual_seed(1234)
        assert torch.equal(noise[i, :frames], torch.randn(frames, 100, device="cuda"))
    assert not noise[1, 20:].any()


@pytest.mark.golden
def test_recorded_f5tts_sample_on_cuda():
    recorded = load_file(FIXTURES / "dit_tiny.sample.safetensors", device="cuda")
    out = f5lite.sample(
        fixture_model(),
        recorded["s3_ref_mel"],
        recorded["s3_text"],
        recorded["s3_duration"],
        SamplerOptions(steps=8),
        lens=recorded["s3_lens"],
        noise=recorded["s3_y0"],
    )
    # Near the former 1e-3 absolute (|out| <= 3.3), in epsilon; not yet measured on a GPU.
    assert_golden(out.cpu(), recorded["s3_out"].cpu(), range_ulps=2048, what="s3 cuda")


def test_half_precision_backbone_on_cuda_keeps_a_float32_state():
    recorded = load_file(FIXTURES / "dit_tiny.sample.safetensors", device="cuda")
    for dtype in (torch.bfloat16, torch.float16):
        out = f5lite.sample(
            fixture_model().to(dtype),
            recorded["s1_ref_mel"],
            recorded["s1_text"],
            100,
            SamplerOptions(steps=7, cfg_zero_init_steps=1, cfg_zero_star=True),
            seed=0,
        )
        assert out.dtype == torch.float32 and torch.isfinite(out).all()


def test_generator_draws_on_cuda_are_reproducible():
    x1, lens = torch.zeros(4, 50, 100, device="cuda"), torch.tensor([50, 40, 30, 20], device="cuda")
    first = draw_flow_randomness(x1, lens, torch.Generator("cuda").manual_seed(0))
    again = draw_flow_randomness(x1, lens, torch.Generator("cuda").manual_seed(0))
    assert first.x0.is_cuda and torch.equal(first.x0, again.x0) and torch.equal(first.span_mask, again.span_mask)
    with pytest.raises(ValueError, match="generator is on cpu"):
        draw_flow_randomness(x1, lens, torch.Generator().manual_seed(0))

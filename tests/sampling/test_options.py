"""`SamplerOptions`: defaults, one-line refusals naming the field, the config's `sample.*` spelling of them, and
the folding of old keyword arguments."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

import f5lite
import f5lite.sampling
from f5lite.config import compose_config
from f5lite.sampling.options import OPTION_NAMES, SamplerOptions

# field -> (a bad value, the other fields it needs to be bad, what the message says)
BAD_VALUES = {
    "steps": (0, {}, r"^steps=0 is not valid; it must be >= 1$"),
    "method": ("rk4", {}, r"^method='rk4' is not valid; choose one of: euler, midpoint$"),
    "schedule": ("cosine", {}, r"^schedule='cosine' is not valid; choose one of: "),
    "cfg_strength": (-0.5, {}, r"^cfg_strength=-0\.5 is not valid; it must be >= 0$"),
    "cfg_zero_init_steps": (4, {"steps": 4}, r"^cfg_zero_init_steps=4 is not valid; it must be in \[0, steps=4\)$"),
    "speed": (0.0, {}, r"^speed=0\.0 is not valid; it must be > 0$"),
}


def test_defaults_are_f5tts_s_and_the_config_s():
    assert SamplerOptions() == SamplerOptions(32, "euler", "auto", -1.0, 2.0, 0, False, 1.0)
    assert compose_config([]).sample.sampler_options() == SamplerOptions()
    names = ("steps", "method", "schedule", "sway", "cfg_strength", "cfg_zero_init_steps", "cfg_zero_star", "speed")
    assert names == OPTION_NAMES


def test_exported_from_the_top_level_and_the_sampling_package():
    assert f5lite.SamplerOptions is SamplerOptions and f5lite.sampling.SamplerOptions is SamplerOptions
    assert "SamplerOptions" in f5lite.__all__ and "SamplerOptions" in f5lite.sampling.__all__


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SamplerOptions().steps = 4  # type: ignore[misc]


@pytest.mark.parametrize("name", BAD_VALUES)
def test_bad_values_are_refused_in_one_line_naming_the_field(name):
    value, needs, pattern = BAD_VALUES[name]
    with pytest.raises(ValueError, match=pattern) as info:
        SamplerOptions(**{**needs, name: value})
    assert "\n" not in str(info.value)


def test_nan_and_a_missing_epss_table_are_refused():
    with pytest.raises(ValueError, match=r"^cfg_strength=nan is not valid"):
        SamplerOptions(cfg_strength=math.nan)
    with pytest.raises(ValueError, match=r"^speed=nan is not valid"):
        SamplerOptions(speed=math.nan)
    with pytest.raises(ValueError, match=r"^schedule='epss' has no table for steps=8 \(tables: 5, 6, 7, 10, 12, 16\)$"):
        SamplerOptions(steps=8, schedule="epss")
    assert SamplerOptions(steps=8, schedule="auto").steps == 8  # auto falls back to uniform


@pytest.mark.parametrize("name", BAD_VALUES)
def test_the_config_reports_bad_values_as_sample_keys(name):
    value, needs, _ = BAD_VALUES[name]
    overrides = [f"sample.{key}={given}" for key, given in {**needs, name: value}.items()]
    with pytest.raises(ValueError, match=rf"^sample\.{name}=") as info:
        compose_config(overrides)
    assert "\n" not in str(info.value)


def test_every_option_is_a_sample_config_key_of_the_same_name():
    config = compose_config(["sample.steps=5", "sample.schedule=epss", "sample.sway=null", "sample.speed=2"])
    assert config.sample.sampler_options() == SamplerOptions(steps=5, schedule="epss", sway=None, speed=2.0)
    sample_keys = {field.name for field in dataclasses.fields(config.sample)}
    assert sample_keys - set(OPTION_NAMES) == {"seed", "vocoder", "vocoder_source"}  # per call or not the sampler's


@pytest.mark.parametrize(
    "settings",
    [
        {"steps": 5},
        {"steps": 7, "cfg_zero_init_steps": 1, "cfg_zero_star": True},
        {"steps": 3, "method": "midpoint"},
        {"steps": 4, "cfg_strength": 0.0},
    ],
)
def test_backbone_calls_is_what_sample_calls(settings: dict) -> None:
    # The count that `compile=auto` plans with must be the count `sample` makes.
    import f5lite

    torch.manual_seed(0)
    backbone = f5lite.build_backbone("dit", dim=16, depth=1, heads=2, dim_head=8, text_dim=8, conv_layers=0,
                                     text_num_embeds=10, mel_dim=4).eval()  # fmt: skip
    calls = []
    backbone.register_forward_hook(lambda *_: calls.append(1))
    options = SamplerOptions(schedule="uniform", **settings)
    f5lite.sample(backbone, torch.zeros(1, 3, 4), torch.zeros(1, 2, dtype=torch.long), 8, options, seed=0)
    assert len(calls) == options.backbone_calls

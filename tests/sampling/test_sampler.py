"""`f5lite.sample`: F5-TTS's recorded outputs, backbone call counts, CFG-Zero*, caching, input handling and the
deprecated keyword settings."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.f5tts_side import Recorder, f5tts_cfm
from support.golden import assert_golden
from support.tiny_models import tiny_backbone

import f5lite
import f5lite.sampling.guidance as guidance_module
import f5lite.sampling.sampler as sampler_module
from f5lite.models import load_backbone_weights
from f5lite.sampling import SamplerOptions, effective_durations, time_grid

CASES = {"s1": 8, "s2": 7, "s3": 8}

FIXTURES = Path(__file__).parents[1] / "assets" / "f5tts_compat"


@pytest.fixture(scope="module")
def recorded() -> dict[str, torch.Tensor]:
    return load_file(FIXTURES / "dit_tiny.sample.safetensors")


@pytest.fixture(scope="module")
def fixture_model() -> torch.nn.Module:
    meta = json.loads((FIXTURES / "dit_tiny.json").read_text())
    model = f5lite.build_backbone("dit", **meta["backbone_kwargs"]).eval()
    load_backbone_weights(model, f5lite.load_f5tts_state_dict(FIXTURES / "dit_tiny.safetensors"))
    return model


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    return tiny_backbone("dit").eval()


def run_case(model, recorded, case, **kwargs):
    return f5lite.sample(
        model,
        recorded[f"{case}_ref_mel"],
        recorded[f"{case}_text"],
        recorded[f"{case}_duration"],
        SamplerOptions(steps=CASES[case], cfg_strength=2.0, sway=-1.0),
        lens=recorded[f"{case}_lens"],
        **kwargs,
    )


# Time grids are values in [0, 1] from one cos: within a few epsilon of 1 whatever the kernel (test_sampling_schedules).
GRID = {"range_ulps": 4}
# An 8-step Euler solve with CFG strength 2 feeds each step's backbone rounding (test_models_compat: a few epsilon of
# the range) through 1 + 2 * (cond - uncond) into the state. Measured at most 4 epsilon of the output's range under
# either kernel set: the steps damp rather than compound it. 64 epsilon (2.5e-5 for |out| <= 3.3; the test allowed
# 1e-4 absolute before) leaves room for other GEMM kernels; a wrong step, guidance or sway moves outputs by 1e-2.
SOLVE = {"range_ulps": 64}


@pytest.mark.golden
@pytest.mark.parametrize("case", CASES)
def test_reproduces_f5tts_sample_with_its_noise(fixture_model, recorded, case):
    assert_golden(time_grid(CASES[case]), recorded[f"{case}_t"], **GRID, what=f"{case} time grid")
    out = run_case(fixture_model, recorded, case, noise=recorded[f"{case}_y0"])
    assert_golden(out, recorded[f"{case}_out"], **SOLVE, what=f"{case} out")


@pytest.mark.golden
@pytest.mark.parametrize("case", CASES)
def test_reproduces_f5tts_sample_from_its_seed(fixture_model, recorded, case):
    # F5-TTS re-seeds the global RNG before each sample's noise; we draw the same numbers from a private generator.
    # The fixture's draws come from torch's AVX2 normal sampler, whose log and cos round differently from the
    # portable kernel's (3.7 epsilon of the range measured); test_seeded_noise_is_f5tts_own_noise_on_this_machine
    # checks them bit for bit against F5-TTS's code on this machine.
    noise = sampler_module.initial_noise(recorded[f"{case}_duration"], 100, seed=1234)
    assert_golden(noise, recorded[f"{case}_y0"], range_ulps=16, what=f"{case} noise")
    state = torch.get_rng_state()
    out = run_case(fixture_model, recorded, case, seed=1234)
    assert torch.equal(torch.get_rng_state(), state)
    assert_golden(out, recorded[f"{case}_out"], **SOLVE, what=f"{case} out from seed")


@pytest.mark.golden
@pytest.mark.parametrize("case", CASES)
def test_seeded_noise_is_f5tts_own_noise_on_this_machine(recorded, case):
    cfm = f5tts_cfm()
    f5tts = cfm.CFM(Recorder(), num_channels=100)
    _, trajectory = f5tts.sample(
        recorded[f"{case}_ref_mel"],
        recorded[f"{case}_text"],
        recorded[f"{case}_duration"],
        lens=recorded[f"{case}_lens"],
        steps=CASES[case],
        cfg_strength=0.0,  # the noise comes before any guidance; no guidance keeps the stand-in backbone simple
        seed=1234,
    )
    noise = sampler_module.initial_noise(recorded[f"{case}_duration"], 100, seed=1234)
    assert torch.equal(noise, trajectory[0])


def test_reference_region_is_restored_and_durations_follow_f5tts_rule(recorded, model):
    text, lens = recorded["s3_text"], recorded["s3_lens"]
    durations = effective_durations(torch.tensor([30, 10]), text, lens)
    assert durations.tolist() == [41, 29]  # max(text ids, ref frames) + 1 wins over the request
    out = f5lite.sample(model, recorded["s3_ref_mel"], text, [30, 10], SamplerOptions(steps=2), lens=lens)
    assert out.shape == (2, 41, 100)
    assert torch.equal(out[0, :40], recorded["s3_ref_mel"][0])
    assert torch.equal(out[1, :28], recorded["s3_ref_mel"][1, :28])
    assert not torch.equal(out[1, 28:40], recorded["s3_ref_mel"][1, 28:40])


class CallCounter:
    def __init__(self, model):
        self.batches: list[int] = []
        self.text_embeds = 0
        self.handle = model.register_forward_hook(lambda module, args, out: self.batches.append(args[0].shape[0]))
        embed = model.embed_text

        def counted(*args, **kwargs):
            self.text_embeds += 1
            return embed(*args, **kwargs)

        model.embed_text = counted
        self.model = model

    def close(self):
        self.handle.remove()
        del self.model.embed_text


@pytest.mark.parametrize(
    ("steps", "schedule", "method", "cfg", "zero_init", "expected"),
    [
        (7, "epss", "euler", 2.0, 0, [4] * 7),
        (7, "epss", "euler", 2.0, 1, [4] * 6),
        (32, "uniform", "euler", 2.0, 0, [4] * 32),
        (32, "uniform", "euler", 2.0, 3, [4] * 29),
        (7, "auto", "euler", 0.0, 0, [2] * 7),
        (4, "uniform", "midpoint", 2.0, 1, [4] * 6),
    ],
)
def test_backbone_call_counts(recorded, steps, schedule, method, cfg, zero_init, expected):
    model = tiny_backbone("dit").eval()
    counter = CallCounter(model)
    f5lite.sample(
        model,
        recorded["s3_ref_mel"],
        recorded["s3_text"],
        60,
        SamplerOptions(steps=steps, schedule=schedule, method=method, cfg_strength=cfg, cfg_zero_init_steps=zero_init),
        lens=recorded["s3_lens"],
    )
    counter.close()
    assert counter.batches == expected  # b = 2: one call of 2b per evaluation with CFG, of b without
    assert counter.text_embeds == 1  # text conditioning computed once per call, not once per step


def test_zero_init_equals_starting_the_solve_later(recorded, model):
    # The first K steps have zero velocity: the state stays at the noise until grid point K.
    ref, text, noise = recorded["s1_ref_mel"], recorded["s1_text"], recorded["s1_y0"]
    out = f5lite.sample(model, ref, text, 100, SamplerOptions(steps=8, cfg_zero_init_steps=2), noise=noise)
    grid = time_grid(8)
    field = guidance_module.velocity_field(model, torch.cat((ref, torch.zeros(1, 60, 100)), 1), text, None, 2.0)
    manual = sampler_module.solve(field, noise, grid[2:], "euler")
    assert torch.equal(out[:, 40:], manual[:, 40:])


def test_zero_star_with_scale_one_equals_plain_cfg(recorded, model, monkeypatch):
    kwargs = {"seed": 3, "lens": recorded["s3_lens"]}
    options = SamplerOptions(steps=4, cfg_strength=2.0)
    zero_star = SamplerOptions(steps=4, cfg_strength=2.0, cfg_zero_star=True)
    plain = f5lite.sample(model, recorded["s3_ref_mel"], recorded["s3_text"], [100, 76], options, **kwargs)
    star = f5lite.sample(model, recorded["s3_ref_mel"], recorded["s3_text"], [100, 76], zero_star, **kwargs)
    assert not torch.allclose(star, plain)
    monkeypatch.setattr(guidance_module, "optimized_scale", lambda v_c, v_u, mask: torch.ones(v_c.shape[0]))
    forced = f5lite.sample(model, recorded["s3_ref_mel"], recorded["s3_text"], [100, 76], zero_star, **kwargs)
    assert torch.equal(forced, plain)


def test_zero_star_scale_is_per_sample_over_valid_frames(recorded, model, monkeypatch):
    seen = []
    real = guidance_module.optimized_scale

    def spy(v_c, v_u, mask):
        s = real(v_c, v_u, mask)
        seen.append((mask.clone(), s, real(v_c[1:, :76], v_u[1:, :76])))
        return s

    monkeypatch.setattr(guidance_module, "optimized_scale", spy)
    f5lite.sample(
        model,
        recorded["s3_ref_mel"],
        recorded["s3_text"],
        [100, 76],
        SamplerOptions(steps=3, cfg_zero_star=True),
        lens=recorded["s3_lens"],
    )
    assert len(seen) == 3
    for mask, s, alone in seen:
        assert mask.sum(1).tolist() == [100, 76]
        assert s.shape == (2,) and s.dtype == torch.float32
        assert torch.allclose(s[1:], alone, atol=1e-6)  # the second sample's padding does not count


def test_batch_one_passes_no_mask_and_batches_pass_duration_masks(recorded):
    model = tiny_backbone("dit").eval()
    masks = []
    handle = model.register_forward_hook(lambda m, args, kwargs, out: masks.append(args[4]), with_kwargs=True)
    one_step = SamplerOptions(steps=1)
    f5lite.sample(model, recorded["s1_ref_mel"], recorded["s1_text"], 100, one_step)
    f5lite.sample(model, recorded["s3_ref_mel"], recorded["s3_text"], [100, 76], one_step, lens=recorded["s3_lens"])
    handle.remove()
    assert masks[0] is None
    assert masks[1].shape == (4, 100) and masks[1].sum(1).tolist() == [100, 76, 100, 76]


def test_text_cache_is_safe_across_threads_and_deepcopy(recorded, model):
    ref, lens = recorded["s3_ref_mel"], recorded["s3_lens"]
    texts = [recorded["s3_text"], recorded["s3_text"].flip(0), torch.full_like(recorded["s3_text"], 5)]
    three = SamplerOptions(steps=3)
    expected = [f5lite.sample(model, ref, t, 80, three, lens=lens, seed=0) for t in texts]
    results: dict[int, torch.Tensor] = {}

    def worker(i):
        results[i] = f5lite.sample(model, ref, texts[i % 3], 80, three, lens=lens, seed=0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(6):
        assert torch.equal(results[i], expected[i % 3])
    twin = copy.deepcopy(model)
    assert torch.equal(f5lite.sample(twin, ref, texts[0], 80, three, lens=lens, seed=0), expected[0])
    assert not any(isinstance(v, torch.Tensor) for k, v in vars(model).items() if not k.startswith("_"))


def test_seed_gives_the_same_noise_whatever_the_batch(recorded, model):
    two = SamplerOptions(steps=2)
    one = f5lite.sample(model, recorded["s1_ref_mel"], recorded["s1_text"], 100, two, seed=7)
    pair = f5lite.sample(
        model, recorded["s1_ref_mel"].repeat(2, 1, 1), recorded["s1_text"].repeat(2, 1), 100, two, seed=7
    )
    assert torch.allclose(pair[0], one[0], atol=1e-5) and torch.allclose(pair[1], one[0], atol=1e-5)
    other = f5lite.sample(model, recorded["s1_ref_mel"], recorded["s1_text"], 100, two, seed=8)
    assert not torch.allclose(other, one)


def test_half_precision_backbone_keeps_a_float32_state(recorded):
    model = tiny_backbone("dit").eval().to(torch.bfloat16)
    options = SamplerOptions(steps=2, cfg_zero_star=True)
    out = f5lite.sample(model, recorded["s1_ref_mel"], recorded["s1_text"], 60, options, seed=0)
    assert out.dtype == torch.float32 and torch.isfinite(out).all()


@pytest.mark.parametrize("name", ["mmdit", "unett"])
def test_other_backbones_sample(recorded, name):
    model = tiny_backbone(name).eval()
    out = f5lite.sample(
        model,
        recorded["s3_ref_mel"],
        recorded["s3_text"],
        [60, 50],
        SamplerOptions(steps=2, cfg_zero_star=True),
        lens=recorded["s3_lens"],
        seed=0,
    )
    assert out.shape == (2, 60, 100) and torch.isfinite(out).all()


def test_bad_inputs_are_refused(recorded, model):
    ref, text = recorded["s1_ref_mel"], recorded["s1_text"]
    with pytest.raises(ValueError, match="noise must have shape"):
        f5lite.sample(model, ref, text, 100, noise=torch.zeros(1, 99, 100))
    with pytest.raises(ValueError, match="cond must be a mel"):
        f5lite.sample(model, ref[..., :80], text, 100)
    with pytest.raises(ValueError, match="text must be int64"):
        f5lite.sample(model, ref, text.float(), 100)
    with pytest.raises(ValueError, match="duration must be"):
        f5lite.sample(model, ref, text, [100, 90])
    with pytest.raises(ValueError, match="lens must have shape"):
        f5lite.sample(model, ref, text, 100, lens=torch.tensor([40, 40]))
    # Bad settings are refused once, when the options are built (more in tests/sampling/test_options.py).
    with pytest.raises(ValueError, match="cfg_zero_init_steps=4"):
        f5lite.sample(model, ref, text, 100, SamplerOptions(steps=4, cfg_zero_init_steps=4))
    with pytest.raises(ValueError, match="cfg_strength"):
        f5lite.sample(model, ref, text, 100, SamplerOptions(cfg_strength=-1.0))
    with pytest.raises(ValueError, match="method='heun'"):
        f5lite.sample(model, ref, text, 100, SamplerOptions(steps=2, method="heun"))
    with pytest.raises(TypeError, match="options must be a SamplerOptions"):
        f5lite.sample(model, ref, text, 100, {"steps": 2})  # type: ignore[arg-type]
    # The keywords of earlier versions are gone: the settings come in one SamplerOptions.
    for old in ("steps", "sway_sampling_coef", "cfg_strength"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{old}'"):
            f5lite.sample(model, ref, text, 100, **{old: 1})

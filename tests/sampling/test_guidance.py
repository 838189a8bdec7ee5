"""CFG in F5-TTS's convention and CFG-Zero*'s optimized scale, on synthetic velocities."""

from __future__ import annotations

import torch

from f5lite.sampling import guided_velocity, optimized_scale


def velocities(b=3, n=10, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, n, d, generator=g), torch.randn(b, n, d, generator=g)


def test_plain_cfg_is_f5tts_formula():
    v_c, v_u = velocities()
    assert torch.equal(guided_velocity(v_c, v_u, 2.0), v_c + (v_c - v_u) * 2.0)
    assert torch.equal(guided_velocity(v_c, v_u, 0.0), v_c)


def test_scale_one_is_exactly_plain_cfg():
    v_c, v_u = velocities()
    ones = torch.ones(v_c.shape[0])
    for cfg in (0.0, 0.7, 2.0, 5.5):
        assert torch.equal(guided_velocity(v_c, v_u, cfg, ones), guided_velocity(v_c, v_u, cfg))


def test_zero_star_is_the_paper_formula_with_w_one_plus_cfg():
    v_c, v_u = velocities()
    s = optimized_scale(v_c, v_u)
    cfg = 2.0
    w = 1 + cfg  # the public F5-TTS patch used w = cfg here, which weakens guidance
    paper = s.view(-1, 1, 1) * v_u + w * (v_c - s.view(-1, 1, 1) * v_u)
    assert torch.allclose(guided_velocity(v_c, v_u, cfg, s), paper, atol=1e-5)
    wrong = s.view(-1, 1, 1) * v_u + cfg * (v_c - s.view(-1, 1, 1) * v_u)
    assert not torch.allclose(guided_velocity(v_c, v_u, cfg, s), wrong, atol=1e-2)


def test_optimized_scale_is_the_least_squares_factor_per_sample():
    v_c, v_u = velocities()
    s = optimized_scale(v_c, v_u)
    assert s.shape == (3,) and s.dtype == torch.float32
    for i in range(3):
        expected = (v_c[i] * v_u[i]).sum() / (v_u[i].square().sum() + 1e-8)
        assert torch.allclose(s[i], expected, atol=1e-6)
        # Least squares: s* minimises ||v_c - s v_u||, so nudging it either way does worse.
        residuals = [(v_c[i] - k * v_u[i]).norm() for k in (s[i] - 0.01, s[i], s[i] + 0.01)]
        assert residuals[1] < residuals[0] and residuals[1] < residuals[2]
    # Each sample on its own gives the same factor: nothing leaks across the batch.
    assert torch.allclose(optimized_scale(v_c[1:2], v_u[1:2]), s[1:2])
    # A known case: v_c = 2 v_u gives s* = 2 whatever v_u is.
    assert torch.allclose(optimized_scale(2 * v_u, v_u), torch.full((3,), 2.0), atol=1e-6)


def test_optimized_scale_ignores_padded_frames():
    v_c, v_u = velocities()
    mask = torch.arange(10)[None, :] < torch.tensor([10, 6, 3])[:, None]
    s = optimized_scale(v_c, v_u, mask)
    junk_c, junk_u = v_c.clone(), v_u.clone()
    junk_c[~mask] = 1e3
    junk_u[~mask] = -7.0
    assert torch.equal(optimized_scale(junk_c, junk_u, mask), s)
    assert torch.allclose(s[1], optimized_scale(v_c[1:2, :6], v_u[1:2, :6])[0], atol=1e-6)
    assert not torch.allclose(optimized_scale(junk_c, junk_u), s)


def test_optimized_scale_is_float32_for_half_inputs_and_finite_for_zero_uncond():
    v_c, v_u = velocities()
    s = optimized_scale(v_c.bfloat16(), v_u.bfloat16())
    assert s.dtype == torch.float32
    assert torch.allclose(s, optimized_scale(v_c.bfloat16().float(), v_u.bfloat16().float()))
    assert torch.equal(optimized_scale(v_c, torch.zeros_like(v_u)), torch.zeros(3))

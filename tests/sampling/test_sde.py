"""The SDE form of the sampler (`f5lite.sampling.sde`): exact step densities, the ODE's marginals, the KL term."""

from __future__ import annotations

import math

import pytest
import torch

from f5lite.sampling.ode import solve
from f5lite.sampling.sde import masked_mean, step_kl, step_log_prob, step_mean_std


def gaussian_velocity(mu: float, sigma: float):  # type: ignore[no-untyped-def]
    """The exact flow velocity for data N(mu, sigma^2) and noise N(0, 1) on the path x_t = (1 - t) x0 + t x1.

    x_t ~ N(t mu, (1 - t)^2 + t^2 sigma^2) and v = E[x1 - x0 | x_t] = mu + c (x_t - t mu), with
    c = Cov(x1 - x0, x_t) / Var(x_t) = (t sigma^2 - (1 - t)) / ((1 - t)^2 + t^2 sigma^2).
    """

    def field(t: torch.Tensor, x: torch.Tensor, dt: torch.Tensor | None = None) -> torch.Tensor:
        var = (1 - t) ** 2 + t**2 * sigma**2
        return mu + (t * sigma**2 - (1 - t)) / var * (x - t * mu)

    return field


@pytest.mark.parametrize("noise_level", [0.0, 0.8])
def test_the_sde_keeps_the_ode_s_marginals(noise_level: float) -> None:
    # With the exact velocity of Gaussian data, the SDE's samples at t = 1 follow the data, whatever the noise level:
    # a wrong sign or factor in the score term would widen or shift them (checked: +score gives std 0.71, not 0.5).
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(20_000, 1, 1, dtype=torch.float64, generator=g)
    grid = torch.linspace(0, 1, 101, dtype=torch.float64)
    states = solve(gaussian_velocity(2.0, 0.5), x0, grid, noise_level=noise_level, generator=g, trajectory=True)
    assert states.shape == (101, 20_000, 1, 1) and torch.equal(states[0], x0)
    final = states[-1].flatten()
    assert abs(float(final.mean()) - 2.0) < 0.02  # the mean's standard error is 0.5 / sqrt(20k) = 0.0035
    assert abs(float(final.std()) - 0.5) < 0.02
    middle = states[50].flatten()  # and at t = 0.5: N(1, 0.25 + 0.0625)
    assert abs(float(middle.std()) - math.sqrt(0.3125)) < 0.02


def test_a_step_s_log_prob_is_the_gaussian_density_of_its_outcome() -> None:
    g = torch.Generator().manual_seed(1)
    x, v = torch.randn(3, 5, 4, generator=g), torch.randn(3, 5, 4, generator=g)
    t, dt = torch.tensor([0.0, 0.3, 0.9]).view(3, 1, 1), torch.tensor([0.1, 0.2, 0.05]).view(3, 1, 1)
    mean, std = step_mean_std(x, v, t, dt, 0.7)
    # The mean and std written out: x + dt (v - a^2 (1 - t)(x - t v) / 2), a (1 - t) sqrt(dt).
    assert torch.allclose(mean, x + dt * (v - 0.245 * (1 - t) * (x - t * v)), atol=1e-6)
    assert torch.allclose(std, 0.7 * (1 - t) * dt.sqrt())
    x_next = mean + std * torch.randn(3, 5, 4, generator=g)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False], [False, True, True, True, True]])
    expected = torch.stack([
        torch.distributions.Normal(mean[i], std[i]).log_prob(x_next[i])[mask[i]].mean() for i in range(3)
    ])  # fmt: skip
    assert torch.allclose(step_log_prob(x_next, mean, std, mask), expected, atol=1e-5)


def test_a_step_s_outcomes_have_the_mean_and_spread_of_its_density() -> None:
    # The rollout draws what step_mean_std says: empirical mean and std of many one-step outcomes.
    x = torch.full((20_000, 1, 3), 0.5)
    grid = torch.tensor([0.2, 0.45])
    v = torch.tensor([1.0, -2.0, 0.0])
    g = torch.Generator().manual_seed(2)
    states = solve(lambda t, s, dt: v.expand_as(s), x, grid, noise_level=1.3, generator=g, trajectory=True)
    mean, std = step_mean_std(x[:1], v.expand(1, 1, 3), grid[0], grid[1] - grid[0], 1.3)
    outcome = states[1]
    assert torch.allclose(outcome.mean(dim=0), mean[0], atol=0.01)  # std 0.52 / sqrt(20k) = 0.004
    assert torch.allclose(outcome.std(dim=0), std.expand(1, 3), rtol=0.03)


@pytest.mark.parametrize("method", ["euler", "midpoint"])
def test_past_its_stochastic_steps_a_rollout_takes_the_ode_s_steps(method: str) -> None:
    # GRPO's window: two takes from one start differ by the first steps' draws, and after them each moves as the
    # sampler's ODE does, with the sampler's method.
    field = gaussian_velocity(2.0, 0.5)
    x0 = torch.randn(1, 6, 3, generator=torch.Generator().manual_seed(3)).expand(2, 6, 3)
    grid = torch.linspace(0, 1, 6)
    g = torch.Generator().manual_seed(4)
    states = solve(field, x0, grid, method, noise_level=0.9, stochastic_steps=2, generator=g, trajectory=True)
    assert torch.equal(states[0, 0], states[0, 1])
    for k in range(1, 3):  # the stochastic steps: the two takes part
        assert float((states[k, 0] - states[k, 1]).abs().min()) > 1e-4
    t, dt = grid[0], grid[1] - grid[0]  # a stochastic step is Euler-Maruyama's whatever the method: its mean is Euler's
    mean, _ = step_mean_std(x0, field(t, x0), t, dt, 0.9)
    assert not torch.equal(states[1], mean)
    for k in range(2, 5):  # the rest: the ODE's steps, exactly
        t, dt = grid[k], grid[k + 1] - grid[k]
        if method == "euler":
            expected = states[k] + dt * field(t, states[k])
        else:
            expected = states[k] + dt * field(t + dt / 2, states[k] + dt / 2 * field(t, states[k]))
        assert torch.equal(states[k + 1], expected)


def test_the_kl_of_two_steps_is_their_mean_gap_over_twice_the_variance() -> None:
    mean = torch.zeros(2, 3, 2)
    ref = torch.zeros(2, 3, 2)
    ref[0] = 0.3
    std = torch.tensor(0.1)
    mask = torch.ones(2, 3, dtype=torch.bool)
    kl = step_kl(mean, ref, std, mask)
    assert torch.allclose(kl, torch.tensor([0.09 / 0.02, 0.0]))
    # The closed form agrees with torch's KL of the two Gaussians.
    closed = torch.distributions.kl_divergence(
        torch.distributions.Normal(mean, std), torch.distributions.Normal(ref, std)
    )
    assert torch.allclose(kl, closed.mean(dim=(1, 2)))


def test_the_masked_mean_counts_only_the_masked_frames() -> None:
    elem = torch.arange(12.0).view(1, 3, 4)
    assert float(masked_mean(elem, torch.tensor([[False, True, False]]))) == 5.5

"""The sampler's ODE made stochastic: an SDE with the same marginals, whose steps have exact Gaussian densities.

Online RL of a flow model (`f5lite.train.grpo`) needs a policy whose samples vary and whose probability of a sample
can be computed. The ODE `dx/dt = v(t, x)` is deterministic, so, as Flow-GRPO and FlowTTS-GRPO do, each step is made
a Gaussian step of an SDE that has the ODE's marginal distribution at every time.

Convention (F5-TTS's): `x_t = (1 - t) x0 + t x1`, noise `x0 ~ N(0, I)` at `t = 0`, data `x1` at `t = 1`, velocity
`v = x1 - x0`. Then `E[x0 | x_t] = x_t - t v`, so the score is `s = -(x_t - t v) / (1 - t)`, and for any noise scale
`sigma_t` the SDE `dx = [v + sigma_t^2 s / 2] dt + sigma_t dW` has the ODE's marginals (Fokker-Planck). We take
`sigma_t = a (1 - t)`: largest at the noise end, zero at the data end, and `sigma_t^2 s / 2 = -a^2 (1 - t)(x - t v)
/ 2` has no division, so every point of a grid, `t = 0` included, gives a finite step. (Flow-GRPO's
`a sqrt(t / (1 - t))`, written in its own time convention, diverges at the noise end, where it must skip a step.)

One Euler-Maruyama step from `t` to `t + dt` (`f5lite.sampling.ode.solve` takes them) draws `x' ~ N(mean, std^2 I)` with `mean = x + dt * drift` and
`std = a (1 - t) sqrt(dt)`, so the log-probability of a recorded step is exact, and the KL divergence between two
policies' steps from the same state (same `std`) is `||mean_1 - mean_2||^2 / (2 std^2)`. `a = 0` is the ODE's
Euler step.

Shapes: b batch, n frames, d mel channels, k steps.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def step_mean_std(x: Tensor, v: Tensor, t: Tensor, dt: Tensor, noise_level: float) -> tuple[Tensor, Tensor]:
    """The Gaussian of one SDE step.

    Args:
        x: state `[b, n, d]` at time `t`.
        v: the velocity at `(t, x)` `[b, n, d]`.
        t: time, 0-d or broadcastable to `x` (e.g. `[b, 1, 1]`).
        dt: step size, shaped like `t`.
        noise_level: `a` of `sigma_t = a (1 - t)`; 0 gives the ODE's Euler step (std 0).

    Returns:
        `mean` `[b, n, d]` and `std` (shaped like `t`).
    """
    drift = v - 0.5 * noise_level**2 * (1 - t) * (x - t * v)
    return x + dt * drift, noise_level * (1 - t) * dt.sqrt()


def step_log_prob(x_next: Tensor, mean: Tensor, std: Tensor, mask: Tensor) -> Tensor:
    """Log-density of a step's outcome, averaged over the masked elements (per element, so scale-free in length).

    Args:
        x_next: the outcome `[b, n, d]`.
        mean: the step's mean `[b, n, d]`.
        std: the step's std, broadcastable to `mean`, > 0.
        mask: `[b, n]` bool, True for the frames that count (the generated ones).

    Returns:
        float32 `[b]`.
    """
    std = std.float()
    elem = -((x_next.float() - mean.float()) ** 2) / (2 * std**2) - torch.log(std) - 0.5 * math.log(2 * math.pi)
    return masked_mean(elem, mask)


def step_kl(mean: Tensor, mean_ref: Tensor, std: Tensor, mask: Tensor) -> Tensor:
    """KL divergence of a step from the same state under two velocity fields (same std), per element.

    Args:
        mean: the policy's step mean `[b, n, d]`.
        mean_ref: the reference's `[b, n, d]`.
        std: the step's std, broadcastable, > 0.
        mask: `[b, n]` bool, True for the frames that count.

    Returns:
        float32 `[b]`, >= 0.
    """
    return masked_mean((mean.float() - mean_ref.float()) ** 2 / (2 * std.float() ** 2), mask)


def masked_mean(elem: Tensor, mask: Tensor) -> Tensor:
    """Mean of `elem` `[b, n, d]` over the frames of `mask` `[b, n]` and all channels: `[b]`."""
    keep = mask[..., None].to(elem.dtype)
    return (elem * keep).sum(dim=(1, 2)) / (keep.sum(dim=(1, 2)) * elem.shape[-1]).clamp_min(1)

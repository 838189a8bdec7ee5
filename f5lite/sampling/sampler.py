"""`sample`: generate mels with a flow-matching backbone, as F5-TTS's `CFM.sample` does, in fewer passes.

Shapes: b batch, n_ref reference frames, nt text ids, N generated frames (the longest duration), d mel channels.

What matches F5-TTS exactly: the duration bound, per-sample seeded noise, time grids, the Euler/midpoint steps, CFG
with the unconditional pass batched with the conditional one, the batch-1 "no mask" rule and the reference-region
overwrite. What is ours: the text conditioning is computed once per call instead of once per step (held by the
call's velocity field, `f5lite.sampling.guidance.velocity_field`, not by the backbone, so concurrent calls and
`copy.deepcopy` of the backbone are safe), only the current ODE state is kept (`f5lite.sampling.ode.solve`), and
CFG-Zero* (zero-init by step index, optimized scale per sample over valid frames). The settings come in one
validated `SamplerOptions`, so `sample` checks only its tensors. The backbone is a `Backbone`
(`f5lite.sampling.backbone`); a distilled student is stepped once per step with its step size and guidance as inputs.

`solve_frames` is `sample`'s solve on laid-out frames, with the SDE window that GRPO's rollouts add
(`f5lite.train.grpo`): with no noise it is `sample`, so the takes RL scores are those the sampler gives users.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from f5lite.sampling.backbone import Backbone
from f5lite.sampling.duration import effective_durations
from f5lite.sampling.guidance import velocity_field
from f5lite.sampling.ode import solve
from f5lite.sampling.options import SamplerOptions, with_model_defaults
from f5lite.sampling.schedules import time_grid


def sample(
    backbone: nn.Module,
    cond: Tensor,
    text: Tensor,
    duration: int | Sequence[int] | Tensor,
    options: SamplerOptions | None = None,
    *,
    lens: Tensor | None = None,
    noise: Tensor | None = None,
    seed: int | None = None,
) -> Tensor:
    """Generate mels that continue a reference, conditioned on text.

    Each sample's duration is raised to at least `max(text_len, ref_len) + 1` (F5-TTS's rule); `N` is the largest.
    With CFG every step makes one backbone call on a batch of `2b` (conditional, then unconditional: audio and text
    dropped); `cfg_strength=0` makes one conditional call of batch `b`. With a batch of one no frame mask is passed
    to the backbone (F5-TTS's behaviour), otherwise `mask = frame < duration`. Runs without autograd.

    Args:
        backbone: a `Backbone` (DiT, MMDiT, UNetT, or a distilled student, which is stepped once per step with its
            guidance as an input), in the mode the caller wants (normally eval). Its inputs are cast to the dtype
            of its parameters; the ODE state keeps `cond`'s dtype.
        cond: reference mel `[b, n_ref, d]`, zero-padded past each sample's `lens`.
        text: ids `[b, nt]` of reference text + text to generate, padded with -1.
        duration: total frames (reference included): an int for every sample, or `b` of them.
        options: the sampler settings (steps, method, schedule, sway, CFG, CFG-Zero*); None means
            `SamplerOptions()`. `options.speed` is not used here: the durations are given.
        lens: reference frames per sample `[b]` int64; None means `n_ref` for all.
        noise: initial state `[b, N, d]`; default: per-sample noise as F5-TTS draws it.
        seed: seed of the default noise. As in F5-TTS every sample is drawn after seeding with the same `seed`
            (here from a private generator, so the global RNG is untouched), so a sample's noise does not depend
            on the rest of the batch. None draws from the global RNG.

    Returns:
        The mel `[b, N, d]` in `cond`'s dtype, with frames `< lens` replaced by the reference. Frames past a
        sample's own duration hold whatever the solver left there (as in F5-TTS).

    Raises:
        ValueError: inconsistent shapes, a wrong `noise` shape, or options a distilled student cannot take.
        TypeError: `options` that is not a `SamplerOptions`, or a `backbone` that is not a `Backbone`.
    """
    if options is None:
        options = SamplerOptions()
    elif not isinstance(options, SamplerOptions):
        raise TypeError(f"sample() options must be a SamplerOptions or None, got {type(options).__name__}")
    if not isinstance(backbone, Backbone):
        raise TypeError(f"backbone must be a Backbone (DiT, MMDiT, UNetT or a student), got {type(backbone).__name__}")
    options = with_model_defaults(backbone, options)  # a distilled student's own steps and guidance
    with torch.no_grad():
        return _sample(backbone, cond, text, duration, options, lens, noise, seed)


def _sample(
    model: Backbone,
    cond: Tensor,
    text: Tensor,
    duration: int | Sequence[int] | Tensor,
    options: SamplerOptions,
    lens: Tensor | None,
    noise: Tensor | None,
    seed: int | None,
) -> Tensor:
    frame = sampler_frames(model, cond, text, duration, lens)
    b, num_frames, mel_dim = frame.cond.shape
    if noise is None:
        x = initial_noise(frame.durations, mel_dim, seed=seed, dtype=cond.dtype)
    elif noise.shape != (b, num_frames, mel_dim):
        raise ValueError(f"noise must have shape {(b, num_frames, mel_dim)}, got {tuple(noise.shape)}")
    else:
        x = noise.to(device=cond.device, dtype=cond.dtype)
    return frame.keep_reference(solve_frames(model, frame, text.to(cond.device), x, options))


def sampler_grid(options: SamplerOptions, device: torch.device | None = None) -> Tensor:
    """The times the sampler steps through: `options`' grid from its first step after CFG-Zero*'s zero-init steps.

    Zero-init steps leave the state at the noise, so the solve starts at grid point K (no call, no host sync).

    Args:
        options: the sampler settings.
        device: where the grid lives.

    Returns:
        float32 `[steps - cfg_zero_init_steps + 1]`, from that time to 1.
    """
    return time_grid(options.steps, options.schedule, options.sway, device=device)[options.cfg_zero_init_steps :]


def solve_frames(
    model: Backbone,
    frame: SamplerFrames,
    text: Tensor,
    x: Tensor,
    options: SamplerOptions,
    *,
    noise_level: float = 0.0,
    stochastic_steps: int | None = None,
    generator: torch.Generator | None = None,
    trajectory: bool = False,
) -> Tensor:
    """The sampler's solve from a start, without the reference put back (`sample` is this, then `keep_reference`).

    Args:
        model: the backbone, in the mode the caller wants; gradients are the caller's to turn off.
        frame: the frames' layout (`sampler_frames`).
        text: ids `[b, nt]` on the frames' device.
        x: the start `[b, N, d]` (noise at the grid's first time).
        options: the sampler settings (a distilled student's own applied: `with_model_defaults`).
        noise_level: the SDE window's noise (`f5lite.sampling.ode.solve`); 0: the sampler's ODE.
        stochastic_steps: the SDE window's steps; None: every step.
        generator: the window's draws.
        trajectory: return every state `[k + 1, b, N, d]` (the start first), not only the last.

    Returns:
        The last state `[b, N, d]`, or every state.

    Raises:
        ValueError: options a distilled student cannot take.
    """
    grid = sampler_grid(options, x.device)
    if model.distilled:
        _check_student(model, grid.shape[0] - 1, options)
    field = velocity_field(model, frame.step_cond, text, frame.mask, options.cfg_strength, options.cfg_zero_star)
    return solve(
        field, x, grid, options.method, noise_level=noise_level, stochastic_steps=stochastic_steps,
        generator=generator, trajectory=trajectory,
    )  # fmt: skip


@dataclass(frozen=True)
class SamplerFrames:
    """The frame layout of a sampler call, shared by the ODE sampler and the RL rollouts (`f5lite.train.grpo`).

    Attributes:
        cond: the reference `[b, N, d]`, zero-padded (or cut) to `N` frames.
        step_cond: what the backbone sees as audio: the reference, zero where generated `[b, N, d]`.
        durations: each sample's frames, the reference's included, F5-TTS's lower bound applied `[b]`.
        lens: reference frames `[b]`.
        mask: `[b, N]` bool, True = frame < duration; None for a batch of one (F5-TTS passes no mask then).
    """

    cond: Tensor
    step_cond: Tensor
    durations: Tensor
    lens: Tensor
    mask: Tensor | None

    def keep_reference(self, x: Tensor) -> Tensor:
        """The state `[b, N, d]` with its reference frames replaced by the reference."""
        ref_mask = torch.arange(x.shape[1], device=x.device)[None, :, None] < self.lens[:, None, None]
        return torch.where(ref_mask, self.cond, x)

    def generated(self) -> Tensor:
        """`[b, N]` bool: the frames the sampler makes (past the reference, before the duration)."""
        frames = torch.arange(self.cond.shape[1], device=self.cond.device)[None, :]
        return (frames >= self.lens[:, None]) & (frames < self.durations[:, None])


def sampler_frames(
    model: Backbone, cond: Tensor, text: Tensor, duration: int | Sequence[int] | Tensor, lens: Tensor | None
) -> SamplerFrames:
    """Check a sampler call's tensors and lay out its frames (see `sample` for the arguments).

    Raises:
        ValueError: inconsistent shapes.
    """
    b, n_ref, _ = _check_inputs(model, cond, text)
    device = cond.device
    lens = torch.full((b,), n_ref, dtype=torch.long, device=device) if lens is None else lens.to(device)
    if lens.shape != (b,):
        raise ValueError(f"lens must have shape ({b},), got {tuple(lens.shape)}")
    durations = effective_durations(_as_durations(duration, b, device), text.to(device), lens)
    num_frames = int(durations.max())
    frames = torch.arange(num_frames, device=device)
    ref_mask = (frames[None, :] < lens[:, None])[..., None]
    cond = _fit_frames(cond, num_frames)
    step_cond = torch.where(ref_mask, cond, torch.zeros((), dtype=cond.dtype, device=device))
    mask = frames[None, :] < durations[:, None] if b > 1 else None
    return SamplerFrames(cond, step_cond, durations, lens, mask)


def _check_student(model: Backbone, steps: int, options: SamplerOptions) -> None:
    """Refuse options a distilled student (`f5lite.models.distill`) cannot take; warn outside what it learned.

    A student takes Euler steps, one pass each, told the step size and the guidance, with no unconditional pass (it
    learned the guided velocity).

    Raises:
        ValueError: options that need another method or an unconditional pass.
    """
    if options.method != "euler" or options.cfg_zero_star or options.cfg_zero_init_steps:
        raise ValueError(
            "a distilled model takes Euler steps with its guidance as an input: method=euler, cfg_zero_star=false "
            "and cfg_zero_init_steps=0"
        )
    _warn_untrained(getattr(model, "trained", {}), steps, options.cfg_strength)


def _warn_untrained(trained: dict[str, Any], steps: int, guidance: float) -> None:
    """Warn (once per message) when a student samples with step counts or guidance it was not distilled for."""
    counts, (low, high) = trained.get("steps") or [], trained.get("guidance") or (-math.inf, math.inf)
    outside = []
    if counts and steps not in counts:
        outside.append(f"{steps} steps (trained: {', '.join(map(str, counts))})")
    if not low <= guidance <= high:
        outside.append(f"guidance {guidance:g} (trained: {low:g} to {high:g})")
    if outside:
        message = f"a distilled model sampled with {' and '.join(outside)}: outside what it learned"
        warnings.warn(message, UserWarning, stacklevel=6)  # the line that called `sample`


def _check_inputs(model: Backbone, cond: Tensor, text: Tensor) -> tuple[int, int, int]:
    if cond.dim() != 3 or cond.shape[-1] != model.mel_dim:
        raise ValueError(f"cond must be a mel [b, n_ref, {model.mel_dim}], got shape {tuple(cond.shape)}")
    if not cond.is_floating_point():
        raise ValueError(f"cond must be floating point, got {cond.dtype}")
    if text.dim() != 2 or text.shape[0] != cond.shape[0] or text.dtype != torch.long:
        raise ValueError(f"text must be int64 ids [{cond.shape[0]}, nt], got {text.dtype} {tuple(text.shape)}")
    b, n_ref, mel_dim = cond.shape
    return b, n_ref, mel_dim


def _as_durations(duration: int | Sequence[int] | Tensor, b: int, device: torch.device) -> Tensor:
    if isinstance(duration, int):
        return torch.full((b,), duration, dtype=torch.long, device=device)
    durations = torch.as_tensor(duration, dtype=torch.long, device=device)
    if durations.shape != (b,):
        raise ValueError(f"duration must be an int or {b} ints, got shape {tuple(durations.shape)}")
    return durations


def _fit_frames(cond: Tensor, num_frames: int) -> Tensor:
    """Zero-pad (or cut) the reference to `num_frames` frames."""
    if cond.shape[1] >= num_frames:
        return cond[:, :num_frames]
    pad = cond.new_zeros(cond.shape[0], num_frames - cond.shape[1], cond.shape[2])
    return torch.cat((cond, pad), dim=1)


def initial_noise(
    durations: Tensor,
    mel_dim: int,
    *,
    seed: int | None = None,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """F5-TTS's noise: `randn(duration_i, d)` per sample, zero-padded to the longest.

    Args:
        durations: each sample's frames `[b]` (on the device to draw on).
        mel_dim: mel channels d.
        seed: each sample drawn right after seeding a private generator with it (F5-TTS's rule: a sample's noise
            does not depend on the rest of the batch).
        generator: else the samples are drawn one after the other from this one; neither: the global RNG.
        dtype: the noise's dtype.

    Returns:
        `[b, max(durations), d]`.
    """
    device = durations.device
    noise = torch.zeros(durations.shape[0], int(durations.max()), mel_dim, dtype=dtype, device=device)
    for i, frames in enumerate(durations.tolist()):
        draws = generator if seed is None else torch.Generator(device).manual_seed(seed)
        noise[i, :frames] = torch.randn(frames, mel_dim, dtype=dtype, device=device, generator=draws)
    return noise

"""`sample`: generate mels with a flow-matching backbone, as F5-TTS's `CFM.sample` does, in fewer passes.

Shapes: b batch, n_ref reference frames, nt text ids, N generated frames (the longest duration), d mel channels.

What matches F5-TTS exactly: the duration bound, per-sample seeded noise, time grids, the Euler/midpoint steps, CFG
with the unconditional pass batched with the conditional one, the batch-1 "no mask" rule and the reference-region
overwrite. What is ours: the text conditioning is computed once per call instead of once per step (held by the
call's velocity field, `f5lite.sampling.guidance.guided_field`, not by the backbone, so concurrent calls and
`copy.deepcopy` of the backbone are safe), only the current ODE state is kept, and CFG-Zero* (zero-init by step
index, optimized scale per sample over valid frames). The settings come in one validated `SamplerOptions`, so
`sample` checks only its tensors. The backbone is a `Backbone` (`f5lite.sampling.backbone`); a distilled student is
stepped once per step with its step size and guidance as inputs.
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
from f5lite.sampling.guidance import guided_field
from f5lite.sampling.ode import integrate
from f5lite.sampling.options import LEGACY_KEYWORDS, SamplerOptions, merge_legacy_keywords, with_model_defaults
from f5lite.sampling.schedules import time_grid

_SAMPLE_KEYWORDS = tuple(name for name in LEGACY_KEYWORDS if name != "speed")
"""The old keywords `sample` took (`speed` never was one: `sample` is given its durations)."""


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
    **legacy: Any,
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
        **legacy: deprecated: the settings as keywords (`steps`, `method`, `schedule`, `sway_sampling_coef`,
            `cfg_strength`, `cfg_zero_init_steps`, `cfg_zero_star`), applied over `options` with a
            `DeprecationWarning`.

    Returns:
        The mel `[b, N, d]` in `cond`'s dtype, with frames `< lens` replaced by the reference. Frames past a
        sample's own duration hold whatever the solver left there (as in F5-TTS).

    Raises:
        ValueError: inconsistent shapes, a wrong `noise` shape, or an invalid legacy setting.
        TypeError: a keyword that is no sampler setting, `options` that is not a `SamplerOptions`, or a `backbone`
            that is not a `Backbone`.
    """
    # Merged here, not in a decorated function, so that the deprecation warning points at the caller's line.
    options = merge_legacy_keywords(options, legacy, "sample", accepted=_SAMPLE_KEYWORDS)
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
    device = cond.device
    if noise is None:
        x = _initial_noise(frame.durations, mel_dim, seed, cond.dtype, device)
    elif noise.shape != (b, num_frames, mel_dim):
        raise ValueError(f"noise must have shape {(b, num_frames, mel_dim)}, got {tuple(noise.shape)}")
    else:
        x = noise.to(device=device, dtype=cond.dtype)

    grid = time_grid(options.steps, options.schedule, options.sway, device=device)
    text = text.to(device)
    if model.distilled:
        x = _student_solve(model, frame.step_cond, text, frame.mask, grid, x, options)
        return frame.keep_reference(x)
    field = guided_field(model, frame.step_cond, text, frame.mask, options.cfg_strength, options.cfg_zero_star)
    # Zero-init steps leave the state at the noise, so the solve starts at grid point K (no call, no host sync).
    x = integrate(field, x, grid[options.cfg_zero_init_steps :], options.method)
    return frame.keep_reference(x)


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


def _student_solve(
    model: Backbone, step_cond: Tensor, text: Tensor, mask: Tensor | None, grid: Tensor, x: Tensor,
    options: SamplerOptions,
) -> Tensor:  # fmt: skip
    """Euler steps of a distilled student (`f5lite.models.distill`).

    One pass per step, told the step's size and the guidance scale, with no unconditional pass (the student learned
    the guided velocity).
    """
    if options.method != "euler" or options.cfg_zero_star or options.cfg_zero_init_steps:
        raise ValueError(
            "a distilled model takes Euler steps with its guidance as an input: method=euler, cfg_zero_star=false "
            "and cfg_zero_init_steps=0"
        )
    _warn_untrained(getattr(model, "trained", {}), grid.shape[0] - 1, options.cfg_strength)
    dtype = next(model.parameters()).dtype
    cond_in = step_cond.to(dtype)
    text_embed = model.embed_text(text, step_cond.shape[1], mask, False)
    for i in range(grid.shape[0] - 1):
        t0, dt = grid[i], grid[i + 1] - grid[i]
        v = model(
            x.to(dtype), cond_in, text, t0.to(dtype), mask, False, False, text_embed=text_embed, step=dt,
            guidance=options.cfg_strength,
        )  # fmt: skip
        x = x + dt * v.to(x.dtype)
    return x


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
        warnings.warn(message, UserWarning, stacklevel=5)  # the line that called `sample`


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


def _initial_noise(
    durations: Tensor, mel_dim: int, seed: int | None, dtype: torch.dtype, device: torch.device
) -> Tensor:
    """F5-TTS's noise: `randn(duration_i, d)` per sample, each drawn right after seeding with `seed`, zero-padded."""
    num_frames = int(durations.max())
    noise = torch.zeros(durations.shape[0], num_frames, mel_dim, dtype=dtype, device=device)
    for i, frames in enumerate(durations.tolist()):
        generator = None if seed is None else torch.Generator(device).manual_seed(seed)
        noise[i, :frames] = torch.randn(frames, mel_dim, dtype=dtype, device=device, generator=generator)
    return noise

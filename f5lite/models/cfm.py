"""The conditional flow-matching (CFM) training objective around a backbone, as in F5-TTS's `CFM.forward`.

Shapes: b batch, n frames, d mel channels, nt text ids.

A random span of each utterance (a fraction U(0.7, 1.0) of its frames) is hidden from the audio condition and
must be generated; the backbone sees the straight path `x_t = (1 - t) x0 + t x1` between noise `x0` and the mel
`x1` and is trained to predict its velocity `x1 - x0`, with the mean squared error taken over the span frames only.
Classifier-free guidance needs an unconditional model, so the condition is dropped at random: the audio with
probability 0.3, and audio plus text with probability 0.2. F5-TTS draws that once per batch with Python's
unseeded `random`; here each sample draws its own, from the `torch.Generator` that also draws everything else,
so a training step is reproducible from the generator's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from f5lite.models.layers import DropFlag

AUDIO_DROP_PROB = 0.3
"""Probability of dropping the audio condition (F5-TTS's `audio_drop_prob`)."""
COND_DROP_PROB = 0.2
"""Probability of dropping audio and text together (F5-TTS's `cond_drop_prob`)."""
SPAN_FRACTION = (0.7, 1.0)
"""Range of the fraction of each utterance that is masked and generated (F5-TTS's `frac_lengths_mask`)."""


@dataclass(frozen=True)
class FlowDraws:
    """The random quantities of one training step.

    Attributes:
        x0: noise `[b, n, d]`, covering padded frames too.
        time: flow time `[b]` in [0, 1).
        span_mask: `[b, n]` bool, the frames to generate (inside each sample's length).
        drop_audio_cond: `[b]` bool, audio condition dropped.
        drop_text: `[b]` bool, text dropped (always together with the audio).
    """

    x0: Tensor
    time: Tensor
    span_mask: Tensor
    drop_audio_cond: Tensor
    drop_text: Tensor


def span_mask(lens: Tensor, num_frames: int, fraction: Tensor, start: Tensor) -> Tensor:
    """F5-TTS's random span: `fraction * len` frames starting at `start * (len - span)`, inside each length.

    Args:
        lens: valid frames `[b]` int64.
        num_frames: padded length n.
        fraction: span fraction `[b]` in (0, 1].
        start: uniform draw `[b]` in [0, 1) placing the span.

    Returns:
        `[b, n]` bool.
    """
    span = (fraction * lens).long()
    first = ((lens - span) * start).long().clamp(min=0)
    frames = torch.arange(num_frames, device=lens.device)[None, :]
    return (frames >= first[:, None]) & (frames < (first + span)[:, None]) & (frames < lens[:, None])


def draw_flow_randomness(
    x1: Tensor,
    lens: Tensor,
    generator: torch.Generator,
    *,
    span_fraction: tuple[float, float] = SPAN_FRACTION,
    audio_drop_prob: float = AUDIO_DROP_PROB,
    cond_drop_prob: float = COND_DROP_PROB,
) -> FlowDraws:
    """Draw a training step's randomness from `generator`.

    The span fraction, span start, noise and time are drawn in F5-TTS's order with its shapes and dtypes, so a
    generator seeded with `s` gives the values F5-TTS gets after `torch.manual_seed(s)`. The two drop decisions
    follow, one pair per sample: `drop_audio = u1 < audio_drop_prob or u2 < cond_drop_prob`,
    `drop_text = u2 < cond_drop_prob`.

    Args:
        x1: mel `[b, n, d]` (for shape, dtype and device).
        lens: valid frames `[b]` int64.
        generator: the source of randomness, on `x1`'s device.
        span_fraction: range of the masked fraction.
        audio_drop_prob: probability of dropping the audio condition alone.
        cond_drop_prob: probability of dropping audio and text.

    Returns:
        The draws.

    Raises:
        ValueError: the generator is on another device than `x1`.
    """
    if generator.device.type != x1.device.type:
        raise ValueError(f"the generator is on {generator.device} but the batch is on {x1.device}")
    b, device = x1.shape[0], x1.device
    fraction = torch.zeros(b, device=device).uniform_(*span_fraction, generator=generator)
    start = torch.rand(b, device=device, generator=generator)
    x0 = torch.randn(x1.shape, dtype=x1.dtype, device=device, generator=generator)
    time = torch.rand(b, dtype=x1.dtype, device=device, generator=generator)
    u_audio, u_both = torch.rand(2, b, device=device, generator=generator)
    drop_both = u_both < cond_drop_prob
    return FlowDraws(
        x0=x0,
        time=time,
        span_mask=span_mask(lens.to(device), x1.shape[1], fraction, start),
        drop_audio_cond=(u_audio < audio_drop_prob) | drop_both,
        drop_text=drop_both,
    )


def flow_loss(
    backbone: nn.Module,
    x1: Tensor,
    text: Tensor,
    lens: Tensor,
    *,
    x0: Tensor,
    time: Tensor,
    span_mask: Tensor,
    drop_audio_cond: DropFlag,
    drop_text: DropFlag,
) -> Tensor:
    """The CFM loss for given random draws: MSE between predicted and true velocity over the span frames.

    The mean runs over every channel of every span frame of the batch (F5-TTS's flattened mean, so longer spans
    weigh more). It is a masked sum divided by a count, without boolean indexing, so shapes stay static for
    `torch.compile`; an empty span gives 0.

    Args:
        backbone: the velocity network, called with the frame mask of `lens`.
        x1: mel `[b, n, d]`, zero in padded frames.
        text: ids `[b, nt]` padded with -1.
        lens: valid frames `[b]` int64.
        x0: noise `[b, n, d]`.
        time: flow time `[b]`.
        span_mask: `[b, n]` bool, frames to generate (restricted to `lens` here).
        drop_audio_cond: drop the audio condition: a bool, or `[b]` bool per sample.
        drop_text: drop the text: a bool, or `[b]` bool per sample.

    Returns:
        The loss, a 0-d float32 tensor.
    """
    error, weight = _span_error(backbone, x1, text, lens, x0, time, span_mask, drop_audio_cond, drop_text)
    count = weight.sum() * x1.shape[-1]
    return error.sum() / count.clamp(min=1.0)


def flow_errors(
    backbone: nn.Module,
    x1: Tensor,
    text: Tensor,
    lens: Tensor,
    *,
    x0: Tensor,
    time: Tensor,
    span_mask: Tensor,
    drop_audio_cond: DropFlag = False,
    drop_text: DropFlag = False,
) -> tuple[Tensor, Tensor]:
    """Per-sample parts of `flow_loss`: the summed squared velocity error over each sample's span, and its size.

    `sums.sum() / counts.sum()` is the batch's `flow_loss` (up to summation order); kept per sample so that a
    validation set can be cut into any batches, or binned by flow time, and give the same totals.

    Args:
        backbone: the velocity network, called with the frame mask of `lens`.
        x1: mel `[b, n, d]`, zero in padded frames.
        text: ids `[b, nt]` padded with -1.
        lens: valid frames `[b]` int64.
        x0: noise `[b, n, d]`.
        time: flow time `[b]`.
        span_mask: `[b, n]` bool, frames to generate (restricted to `lens` here).
        drop_audio_cond: drop the audio condition (default: kept).
        drop_text: drop the text (default: kept).

    Returns:
        `sums` `[b]` float32 and `counts` `[b]` float32 (span frames times channels).
    """
    error, weight = _span_error(backbone, x1, text, lens, x0, time, span_mask, drop_audio_cond, drop_text)
    return error.sum(dim=(1, 2)), weight.sum(dim=(1, 2)) * x1.shape[-1]


def _span_error(
    backbone: nn.Module,
    x1: Tensor,
    text: Tensor,
    lens: Tensor,
    x0: Tensor,
    time: Tensor,
    span_mask: Tensor,
    drop_audio_cond: DropFlag,
    drop_text: DropFlag,
) -> tuple[Tensor, Tensor]:
    """Squared velocity error `[b, n, d]` (float32, zero outside the span) and the span weight `[b, n, 1]`."""
    frames = torch.arange(x1.shape[1], device=x1.device)
    mask = frames[None, :] < lens[:, None]
    span = span_mask & mask
    t = time.view(-1, 1, 1)
    x_t = (1 - t) * x0 + t * x1
    flow = x1 - x0
    cond = torch.where(span[..., None], torch.zeros((), dtype=x1.dtype, device=x1.device), x1)
    pred = backbone(x_t, cond, text, time, mask=mask, drop_audio_cond=drop_audio_cond, drop_text=drop_text)
    weight = span[..., None].to(torch.float32)
    return (pred.float() - flow.float()).square() * weight, weight


class CFM(nn.Module):
    """A backbone plus the flow-matching objective; the backbone is `transformer`, so weights are `transformer.*`.

    Args:
        transformer: the velocity network (DiT, MMDiT or UNetT).
        span_fraction: range of the masked fraction of each utterance.
        audio_drop_prob: probability of dropping the audio condition alone.
        cond_drop_prob: probability of dropping audio and text.

    Raises:
        ValueError: a probability outside [0, 1] or a fraction range outside (0, 1].
    """

    def __init__(
        self,
        transformer: nn.Module,
        *,
        span_fraction: tuple[float, float] = SPAN_FRACTION,
        audio_drop_prob: float = AUDIO_DROP_PROB,
        cond_drop_prob: float = COND_DROP_PROB,
    ) -> None:
        super().__init__()
        low, high = span_fraction
        if not 0 < low <= high <= 1:
            raise ValueError(f"span_fraction={span_fraction!r} is not valid; it needs 0 < low <= high <= 1")
        for name, prob in (("audio_drop_prob", audio_drop_prob), ("cond_drop_prob", cond_drop_prob)):
            if not 0 <= prob <= 1:
                raise ValueError(f"{name}={prob!r} is not valid; it must be in [0, 1]")
        self.transformer = transformer
        self.span_fraction = (low, high)
        self.audio_drop_prob = audio_drop_prob
        self.cond_drop_prob = cond_drop_prob

    def draw(self, x1: Tensor, lens: Tensor, generator: torch.Generator) -> FlowDraws:
        """Draw one step's randomness (see `draw_flow_randomness`)."""
        return draw_flow_randomness(
            x1,
            lens,
            generator,
            span_fraction=self.span_fraction,
            audio_drop_prob=self.audio_drop_prob,
            cond_drop_prob=self.cond_drop_prob,
        )

    def forward(self, x1: Tensor, text: Tensor, lens: Tensor, *, generator: torch.Generator) -> Tensor:
        """The training loss of one batch.

        Args:
            x1: mel `[b, n, d]`, zero in padded frames.
            text: ids `[b, nt]` padded with -1.
            lens: valid frames `[b]` int64.
            generator: the source of all randomness of the step, on `x1`'s device.

        Returns:
            The loss, a 0-d float32 tensor.
        """
        draws = self.draw(x1, lens, generator)
        return flow_loss(
            self.transformer,
            x1,
            text,
            lens,
            x0=draws.x0,
            time=draws.time,
            span_mask=draws.span_mask,
            drop_audio_cond=draws.drop_audio_cond,
            drop_text=draws.drop_text,
        )

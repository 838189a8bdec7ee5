"""The duration predictor: how many mel frames a text takes to say, learned from the training data.

Ein notation: b batch, nt text ids after padding, d width.

F5-TTS sizes what it generates with a byte ratio (`f5lite.sampling.duration.estimate_duration`): every UTF-8 byte
of text lasts as long as the reference's average byte. This model keeps that shape and learns the weights: the text
ids (padded with -1) go through an embedding and a few ConvNeXt-style blocks (a depthwise convolution over the
neighbouring tokens, layer norm, a GELU MLP, a residual), then a linear head gives one log-duration per token; the
text's log-frames is the log-sum-exp over its tokens, so a text twice as long lasts about twice as long, whatever
length the model was trained on.

At inference the reference clip measures the speaker's rate against the model's own estimate of its transcript:
`gen_frames = ref_frames * exp(log_frames(gen_text) - log_frames(ref_text))` (`f5lite.sampling.predicted_duration`).

Training (`duration_loss`) fits the log-frames of whole utterances, and, where a batch holds two utterances of the
same speaker, the log-ratio of their lengths: the quantity inference uses, in which the speaker's own speaking rate
cancels. On the demo data the ratio term halves the error against the absolute fit alone (see the duration predictor guide of the docs).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from f5lite.text import PAD_ID

ABSOLUTE_WEIGHT = 0.1
"""Weight of the absolute log-frames term against the same-speaker ratio term: small, because speakers' own rates
make it noisy, but not zero, so that a batch without speaker labels still trains (and the scale stays anchored)."""
_MASKED = -1.0e4  # log-duration of a padding position: exp() of it is 0 in float32 and bf16 alike


class DurationBlock(nn.Module):
    """Depthwise convolution over neighbouring tokens, then a pre-norm GELU MLP, with a residual.

    Args:
        dim: width.
        kernel_size: tokens the convolution sees (odd).
    """

    def __init__(self, dim: int, kernel_size: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv1d(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        """Args: x `[b, nt, d]`; keep `[b, nt, 1]` (1 for real tokens). Returns `[b, nt, d]`."""
        # Padding is zeroed before the convolution so that a text's result does not depend on its batch mates.
        h = self.dwconv((x * keep).transpose(1, 2)).transpose(1, 2)
        return x + self.mlp(self.norm(h))


class DurationPredictor(nn.Module):
    """Text ids in, log mel frames out (see the module docstring).

    Args:
        text_num_embeds: size of the token table (the run's vocab, or 256 for the byte tokenizer).
        dim: width.
        depth: number of `DurationBlock`s.
        kernel_size: tokens each block's convolution sees (odd).

    Raises:
        ValueError: a size below 1, or an even kernel.
    """

    def __init__(self, text_num_embeds: int, dim: int = 64, depth: int = 3, kernel_size: int = 5) -> None:
        super().__init__()
        for name, value in (("text_num_embeds", text_num_embeds), ("dim", dim), ("depth", depth)):
            if value < 1:
                raise ValueError(f"{name}={value} is not valid; it must be >= 1")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size={kernel_size} is not valid; it must be odd")
        self.text_num_embeds = text_num_embeds
        self.dim, self.depth, self.kernel_size = dim, depth, kernel_size
        self.embed = nn.Embedding(text_num_embeds + 1, dim)  # row 0 is padding: ids are shifted by one
        self.blocks = nn.ModuleList(DurationBlock(dim, kernel_size) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 1)

    def token_log_durations(self, text: Tensor) -> Tensor:
        """Log mel frames of each token; padding positions get a large negative value.

        Args:
            text: ids `[b, nt]` int64, padded with -1.

        Returns:
            `[b, nt]` float32.
        """
        keep = (text != PAD_ID).unsqueeze(-1)
        x = self.embed(text.clamp(min=PAD_ID) + 1)
        for block in self.blocks:
            x = block(x, keep.to(x.dtype))
        # The sum over tokens is taken in float32: bf16 would round a 500-token sum to 1/128 of itself.
        return self.head(self.norm(x)).squeeze(-1).float().masked_fill(~keep.squeeze(-1), _MASKED)

    def forward(self, text: Tensor) -> Tensor:
        """Log of the mel frames each text takes to say.

        Args:
            text: ids `[b, nt]` int64, padded with -1; every row holds at least one id.

        Returns:
            `[b]` float32.
        """
        return torch.logsumexp(self.token_log_durations(text), dim=-1)


def same_speaker_pairs(speakers: Sequence[str | None]) -> tuple[list[int], list[int]]:
    """Pair each utterance with the next one of the same speaker in the batch (cyclically).

    Args:
        speakers: each row's speaker, None where unknown.

    Returns:
        Two equally long index lists `(a, b)`: row `a[k]` and row `b[k]` share a speaker and `a[k] != b[k]`; rows
        whose speaker is unknown or alone in the batch appear in neither.
    """
    rows: dict[str, list[int]] = {}
    for index, speaker in enumerate(speakers):
        if speaker is not None:
            rows.setdefault(speaker, []).append(index)
    first: list[int] = []
    second: list[int] = []
    for members in rows.values():
        if len(members) > 1:
            first.extend(members)
            second.extend(members[1:] + members[:1])
    return first, second


def duration_loss(log_frames: Tensor, frames: Tensor, speakers: Sequence[str | None]) -> Tensor:
    """The predictor's training loss: log-frames error, plus the log-ratio error of same-speaker pairs.

    Args:
        log_frames: predicted `[b]` (from `DurationPredictor`).
        frames: true mel frames `[b]` (int or float, >= 1).
        speakers: each row's speaker, None where unknown (see `same_speaker_pairs`).

    Returns:
        0-d float32: `ABSOLUTE_WEIGHT * mean((log_frames - log(frames))**2)` plus the mean squared error of
        `log_frames[a] - log_frames[b]` against `log(frames[a] / frames[b])` over the pairs, when there are any.
    """
    target = frames.float().log()
    loss = ABSOLUTE_WEIGHT * F.mse_loss(log_frames, target)
    first, second = same_speaker_pairs(speakers)
    if first:
        a, b = _on_device(first, log_frames.device), _on_device(second, log_frames.device)
        loss = loss + F.mse_loss(log_frames[a] - log_frames[b], target[a] - target[b])
    return loss


def _on_device(indices: list[int], device: torch.device) -> Tensor:
    """Host indices on `device` without a host sync.

    A copy from pageable memory waits for the device's queue to drain; one from page-locked memory is queued like any
    kernel.
    """
    host = torch.tensor(indices, dtype=torch.int64, pin_memory=device.type == "cuda")
    return host.to(device, non_blocking=True)

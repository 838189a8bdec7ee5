"""Batches of utterances: padded mels and padded text ids, with their lengths.

Ein notation: b - batch size, n - mel frames after padding, nt - text ids after padding, N_MELS (100) - channels.

Lengths can be padded up to a multiple (`pad_multiple`), so that compiled code meets a few distinct shapes instead
of one per batch; the frame-budget sampler counts the same padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from f5lite.text import PAD_ID
from f5lite.text.encode import pad_ids

MEL_PAD_VALUE = 0.0
"""Value of the padded mel frames (F5-TTS's collate pads with 0; the lengths mask them out)."""


@dataclass(frozen=True)
class Batch:
    """A training batch.

    Attributes:
        mel: `[b, n, N_MELS]` float32 log-mels, right-padded with `MEL_PAD_VALUE`.
        mel_lengths: `[b]` int64 real frames per row.
        text_ids: `[b, nt]` int64 vocab ids (or bytes), right-padded with -1.
        text_lengths: `[b]` int64 real ids per row.
        paths: The audio file of each row.
        num_skipped: Unreadable items replaced while making this batch (to log; normally 0).
        speakers: Each row's speaker, None where the data does not say (the duration predictor pairs rows by it).
    """

    mel: Tensor
    mel_lengths: Tensor
    text_ids: Tensor
    text_lengths: Tensor
    paths: list[str]
    num_skipped: int
    speakers: list[str | None] = field(default_factory=list)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """The batch with its tensors on `device`.

        Args:
            device: The target device.
            non_blocking: Copy asynchronously (from pinned memory).

        Returns:
            A new batch.
        """
        return replace(
            self,
            mel=self.mel.to(device, non_blocking=non_blocking),
            mel_lengths=self.mel_lengths.to(device, non_blocking=non_blocking),
            text_ids=self.text_ids.to(device, non_blocking=non_blocking),
            text_lengths=self.text_lengths.to(device, non_blocking=non_blocking),
        )

    def pin_memory(self) -> Batch:
        """The batch with its tensors in pinned memory (called by a DataLoader with `pin_memory=True`)."""
        return replace(
            self,
            mel=self.mel.pin_memory(),
            mel_lengths=self.mel_lengths.pin_memory(),
            text_ids=self.text_ids.pin_memory(),
            text_lengths=self.text_lengths.pin_memory(),
        )


@dataclass(frozen=True)
class Utterance:
    """One loaded training item.

    Attributes:
        mel: Log-mel `[n, N_MELS]` float32, at 24 kHz; `[n, 0]` from a dataset that reads no audio (only lengths).
        ids: The transcript as vocab ids (or bytes).
        path: The audio file (or the cut id) it came from, for messages.
        num_skipped: Unreadable items that were replaced to produce this one (0 normally).
        speaker: Its speaker, when the data says.
    """

    mel: Tensor
    ids: list[int]
    path: str
    num_skipped: int
    speaker: str | None = None


def collate(items: Sequence[Utterance], pad_multiple: int = 1) -> Batch:
    """Pad and stack utterances into a batch; lengths are rounded up to a multiple of `pad_multiple`.

    Args:
        items: `b` utterances.
        pad_multiple: round the padded mel and text lengths up to a multiple of this.

    Returns:
        The batch.

    Raises:
        ValueError: an empty list, or `pad_multiple` < 1.
    """
    if not items:
        raise ValueError("cannot collate an empty batch")
    if pad_multiple < 1:
        raise ValueError(f"pad_multiple={pad_multiple} is not valid; it must be >= 1")
    mel = pad_sequence([item.mel for item in items], batch_first=True, padding_value=MEL_PAD_VALUE)
    ids, lengths = pad_ids([item.ids for item in items])
    return Batch(
        mel=_pad(mel, 1, MEL_PAD_VALUE, pad_multiple),
        mel_lengths=torch.tensor([item.mel.shape[0] for item in items], dtype=torch.int64),
        text_ids=_pad(ids, 1, PAD_ID, pad_multiple),
        text_lengths=lengths,
        paths=[item.path for item in items],
        num_skipped=sum(item.num_skipped for item in items),
        speakers=[item.speaker for item in items],
    )


def _pad(tensor: Tensor, dim: int, value: float, multiple: int) -> Tensor:
    extra = -tensor.shape[dim] % multiple
    if extra == 0:
        return tensor
    # F.pad lists (left, right) pairs from the last dimension backwards.
    pad = [0, 0] * (tensor.dim() - 1 - dim) + [0, extra]
    return F.pad(tensor, pad, value=value)

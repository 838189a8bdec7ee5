"""Batches of utterances: padded mels and padded text ids, with their lengths.

Ein notation: b - batch size, n - mel frames after padding, nt - text ids after padding, N_MELS (100) - channels.

Lengths can be padded up to a multiple (`pad_multiple`), so that compiled code meets a few distinct shapes instead
of one per batch; the frame-budget sampler counts the same padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from f5lite.data.dataset import Utterance
from f5lite.text import PAD_ID, TextEncoder

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
    """

    mel: Tensor
    mel_lengths: Tensor
    text_ids: Tensor
    text_lengths: Tensor
    paths: list[str]
    num_skipped: int

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


class Collate:
    """Turns a list of `Utterance`s into a `Batch` (a DataLoader `collate_fn`; it runs in the loader workers).

    Args:
        encoder: Maps the transcripts to ids.
        pad_multiple: Round the padded mel and text lengths up to a multiple of this.

    Raises:
        ValueError: `pad_multiple` < 1.
    """

    def __init__(self, encoder: TextEncoder, pad_multiple: int = 1) -> None:
        if pad_multiple < 1:
            raise ValueError(f"pad_multiple={pad_multiple} is not valid; it must be >= 1")
        self.encoder = encoder
        self.pad_multiple = pad_multiple

    def __call__(self, items: Sequence[Utterance]) -> Batch:
        """Pad and stack `items`.

        Args:
            items: `b` utterances.

        Returns:
            The batch.
        """
        if not items:
            raise ValueError("cannot collate an empty batch")
        mel = pad_sequence([item.mel for item in items], batch_first=True, padding_value=MEL_PAD_VALUE)
        text = self.encoder.encode([item.text for item in items])
        return Batch(
            mel=self._pad(mel, 1, MEL_PAD_VALUE),
            mel_lengths=torch.tensor([item.mel.shape[0] for item in items], dtype=torch.int64),
            text_ids=self._pad(text.ids, 1, PAD_ID),
            text_lengths=text.lengths,
            paths=[item.path for item in items],
            num_skipped=sum(item.num_skipped for item in items),
        )

    def _pad(self, tensor: Tensor, dim: int, value: float) -> Tensor:
        extra = -tensor.shape[dim] % self.pad_multiple
        if extra == 0:
            return tensor
        # F.pad lists (left, right) pairs from the last dimension backwards.
        pad = [0, 0] * (tensor.dim() - 1 - dim) + [0, extra]
        return F.pad(tensor, pad, value=value)

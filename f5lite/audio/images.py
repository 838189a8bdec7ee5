"""Mel-spectrograms as pictures, for metric loggers and evaluation reports."""

from __future__ import annotations

import numpy as np
import torch


def mel_image(mel: torch.Tensor) -> np.ndarray:
    """A log-mel as a grey-scale image, low frequencies at the bottom.

    Args:
        mel: `[n, mels]`, any float dtype and device.

    Returns:
        `[mels, n]` uint8, the mel's range stretched to 0..255.
    """
    m = mel.detach().float().cpu()
    m = (m - m.min()) / (m.max() - m.min()).clamp(min=1e-5)
    return (m.T.flip(0) * 255).round().to(torch.uint8).numpy()

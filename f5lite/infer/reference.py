"""A reference voice as the model reads it: the clip made loud enough, its log-mel and its prepared transcript.

Every way f5lite speaks starts from a `Reference`: `Synthesizer.reference` reads one from a file or a waveform,
`f5lite-serve` keeps one per voice of its folder, the studio one per saved voice. The clip is raised to RMS 0.1 when
quieter (F5-TTS's rule; the speech made from it is lowered by the same factor), and its transcript must be one of the
clip (`f5lite.infer.chunking.check_ref_text`): bounded in characters, spaces included, and then in the model's own
tokens, before anything is computed from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE, log_mel, normalize_rms
from f5lite.infer.chunking import check_ref_text, prepare_ref_text

MIN_SECONDS = 1.0
"""The shortest reference clip the server and the studio accept."""


@dataclass(frozen=True)
class Reference:
    """A loaded reference.

    Attributes:
        text: its transcript, prepared as the model reads it (ends like a sentence).
        wave: `[samples]` 24 kHz mono, loudness-normalised.
        rms: its loudness before normalisation (the speech made from it is brought back to it).
        mel: `[frames, n_mels]` log-mel of `wave`, in the model's mel convention.
    """

    text: str
    wave: Tensor
    rms: float
    mel: Tensor

    @property
    def seconds(self) -> float:
        """The clip's length."""
        return self.wave.shape[0] / SAMPLE_RATE


def make_reference(
    wave: Tensor,
    text: str,
    mel_type: str,
    device: torch.device | None = None,
    tokens: Callable[[str], int] | None = None,
) -> Reference:
    """A reference from its clip and transcript.

    Args:
        wave: `[samples]` 24 kHz mono float.
        text: its transcript (not yet prepared).
        mel_type: the model's mel convention (`vocos` or `bigvgan`).
        device: where the mel is computed and kept; None: the clip's device.
        tokens: counts a text's ids as the model reads it (`TextEncoder.length`), checked after the characters;
            None: characters only.

    Returns:
        The reference.

    Raises:
        ValueError: an empty transcript, or one with more characters (or tokens) per second than anyone says.
    """
    prepared = prepare_ref_text(text)
    seconds = wave.shape[0] / SAMPLE_RATE
    check_ref_text(prepared, seconds)  # characters first: cheap, and it bounds what the tokenizer is given
    if tokens is not None:
        check_ref_text(prepared, seconds, tokens, "tokens")
    normalised, rms = normalize_rms(wave)
    mel = log_mel(normalised.to(device or normalised.device)[None], kind=mel_type)[0]
    return Reference(prepared, normalised, float(rms), mel)

"""The audio format shared by every released F5-TTS / E2-TTS model and therefore by all of f5lite.

Models, vocoders and data pipelines must agree on these numbers: a checkpoint trained on one mel layout is
useless with another. They are the values of F5-TTS's `mel_spec_kwargs` and of the `charactr/vocos-mel-24khz`
vocoder.
"""

from __future__ import annotations

SAMPLE_RATE = 24000
"""Waveform sample rate in Hz."""

N_FFT = 1024
"""FFT size of the STFT behind the mel spectrogram (513 frequency bins)."""

WIN_LENGTH = 1024
"""Hann window length in samples."""

HOP_LENGTH = 256
"""Samples between consecutive mel frames (93.75 frames per second)."""

N_MELS = 100
"""Mel channels per frame."""

F_MIN = 0.0
"""Lowest mel filter edge in Hz."""

F_MAX = SAMPLE_RATE / 2
"""Highest mel filter edge in Hz (the Nyquist frequency)."""

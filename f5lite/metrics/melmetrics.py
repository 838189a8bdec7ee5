"""Distances between generated speech and its ground truth in the mel domain; they need no model.

Both waveforms are resampled to 24 kHz and turned into F5-TTS's log-mels (`f5lite.audio.log_mel`, "vocos":
100 bands, hop 256, natural log of the magnitude), in float64: a float32 log-mel rounds differently under each of
torch's CPU kernel sets, and a warping path that flips on a near tie would move the numbers a user compares across
machines by more than that rounding. The two sequences are aligned with dynamic time warping
(librosa's DTW, Euclidean frame distance, steps (1, 1), (0, 1), (1, 0)), so a different speaking rate is not counted
as an error, and each distance is averaged over the frame pairs of the warping path:

- `mel_l1`: mean absolute log-mel difference over the pairs and the 100 bands, path found on the log-mels.
- `mcd`: mel-cepstral distortion in dB, `(10 / ln 10) * sqrt(2 * sum_{d=1..24} (c_d - c'_d) ** 2)` per pair,
  where `c_d = (1 / M) * sum_m L_m * cos(pi * d * (m + 1/2) / M)` are the cosine-series (real cepstrum)
  coefficients of a log-mel frame `L` of `M = 100` bands, so that `L(w) = c_0 + 2 * sum_d c_d * cos(d * w)`;
  `c_0` (the loudness) is left out and the path is found on these 24 cepstra. They come from F5-TTS's log-mels,
  not SPTK's all-pass mel-cepstra, so compare it with numbers from this code, not with papers' MCD.
- `f0_rmse`: root mean square F0 difference in cents, `1200 * log2(f0 / f0_gt)`, over the pairs of the cepstral
  path voiced in both; F0 from librosa's pYIN (50 to 1000 Hz) on the mel frames. Left out when no pair is voiced
  in both.
- `f0_pairs`: how many frame pairs `f0_rmse` rests on (0 when it is left out). Below `F0_FEW_PAIRS` (about half a
  second of voiced speech) the figure is noise, and the report says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from f5lite.audio import HOP_LENGTH, N_FFT, SAMPLE_RATE, log_mel
from f5lite.metrics.backend import EVAL_EXTRA, require, resample

MCD_ORDER = 24
F0_MIN_HZ = 50.0
F0_MAX_HZ = 1000.0
F0_FEW_PAIRS = 50
"""Fewer voiced frame pairs than this (0.53 s at 93.75 frames/s) make `f0_rmse` noise rather than a measurement."""
_MCD_SCALE = 10.0 / math.log(10.0) * math.sqrt(2.0)


def check_available() -> None:
    """Raise ImportError (with the install hint) unless librosa and scipy are installed."""
    _libraries()


def _libraries() -> tuple[Any, Any]:
    user = "the mel metric"
    return require("librosa", EVAL_EXTRA, user), require("scipy.spatial.distance", EVAL_EXTRA, user)


def mel_distances(audio: Tensor, sample_rate: int, gt_audio: Tensor, gt_sample_rate: int) -> dict[str, float]:
    """`mel_l1`, `mcd`, `f0_rmse` of `audio` against `gt_audio`, and `f0_pairs` (see the module docstring).

    Args:
        audio: `[samples]` generated speech.
        sample_rate: its rate in Hz.
        gt_audio: `[samples]` ground truth of the same text in the same voice.
        gt_sample_rate: its rate in Hz.

    Returns:
        {"mel_l1", "mcd", "f0_rmse"} as floats and "f0_pairs" as an int; "f0_rmse" is missing when no aligned frame
        is voiced in both.

    Raises:
        ValueError: either waveform is not a non-empty 1-D tensor, or is shorter than one STFT window.
        ImportError: librosa or scipy is not installed.
    """
    librosa, distance = _libraries()
    waves = [_wave_24k(audio, sample_rate, "audio"), _wave_24k(gt_audio, gt_sample_rate, "gt_audio")]
    mels = [log_mel(wave[None], kind="vocos")[0].numpy() for wave in waves]

    def path(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, steps = librosa.sequence.dtw(C=distance.cdist(a, b), backtrack=True)
        return steps[::-1, 0], steps[::-1, 1]

    i, j = path(*mels)
    mel_l1 = float(np.abs(mels[0][i] - mels[1][j]).mean())

    ceps = [mel_cepstrum(mel) for mel in mels]
    i, j = path(*ceps)
    mcd = float((_MCD_SCALE * np.sqrt(((ceps[0][i] - ceps[1][j]) ** 2).sum(axis=1))).mean())

    (f0, voiced), (f0_gt, voiced_gt) = (_pitch(librosa, wave.numpy()) for wave in waves)
    both = voiced[i] & voiced_gt[j]
    result: dict[str, float] = {"mel_l1": mel_l1, "mcd": mcd, "f0_pairs": int(both.sum())}
    if both.any():
        cents = 1200.0 * np.log2(f0[i][both] / f0_gt[j][both])
        result["f0_rmse"] = float(np.sqrt(np.mean(cents**2)))
    return result


def _wave_24k(audio: Tensor, sample_rate: int, what: str) -> Tensor:
    wave = resample(audio, sample_rate, SAMPLE_RATE, what, dtype=torch.float64)
    if wave.numel() <= N_FFT // 2:
        raise ValueError(f"{what} is too short for the mel metrics: {wave.numel()} samples at {SAMPLE_RATE} Hz")
    return wave


def mel_cepstrum(mel: np.ndarray) -> np.ndarray:
    """Cepstra `c_1 .. c_24` of log-mel frames: `c_d = (1 / M) * sum_m L_m * cos(pi * d * (m + 1/2) / M)`.

    Args:
        mel: `[frames, M]` natural-log mel magnitudes.

    Returns:
        `[frames, MCD_ORDER]` float64.
    """
    scipy_fft = require("scipy.fft", EVAL_EXTRA, "the mel metric")
    # scipy's unnormalised DCT-II is 2 * sum_m L_m * cos(...): 2 M times the cepstrum.
    return np.asarray(scipy_fft.dct(mel, type=2, axis=-1)[..., 1 : MCD_ORDER + 1] / (2 * mel.shape[-1]))


def _pitch(librosa: Any, wave: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F0 in Hz and the voiced flags on the log-mel frames (centred windows, hop 256 at 24 kHz)."""
    f0, voiced, _ = librosa.pyin(
        wave, fmin=F0_MIN_HZ, fmax=F0_MAX_HZ, sr=SAMPLE_RATE, frame_length=N_FFT, hop_length=HOP_LENGTH
    )
    return f0, voiced

"""Log-mel spectrograms in F5-TTS's two conventions, "vocos" and "bigvgan".

A model only works with the vocoder whose mel it was trained on, so both conventions are reproduced exactly as
F5-TTS computes them (`f5_tts/model/modules.py`). Every released F5-TTS model uses "vocos"; "bigvgan" is for
checkpoints such as `F5TTS_Base_bigvgan`. Mels are laid out `[batch, frames, N_MELS]` throughout f5lite.
"""

from __future__ import annotations

import functools
from typing import Literal, NamedTuple, get_args

import torch
import torch.nn.functional as F
import torchaudio
from torch import Tensor

from f5lite.audio.constants import F_MAX, F_MIN, HOP_LENGTH, N_FFT, N_MELS, SAMPLE_RATE, WIN_LENGTH

MelKind = Literal["vocos", "bigvgan"]
MEL_KINDS: tuple[MelKind, ...] = get_args(MelKind)


class FilterbankOptions(NamedTuple):
    """How the triangular mel filters are built (torchaudio's `norm` and `mel_scale` arguments)."""

    norm: str | None
    mel_scale: str


FILTERBANK_OPTIONS: dict[MelKind, FilterbankOptions] = {
    # torchaudio's MelSpectrogram defaults, which F5-TTS and the Vocos vocoder use.
    "vocos": FilterbankOptions(norm=None, mel_scale="htk"),
    # librosa.filters.mel's defaults, which the BigVGAN recipe (and so F5-TTS) uses.
    "bigvgan": FilterbankOptions(norm="slaney", mel_scale="slaney"),
}

# Reflect padding added to each side of the waveform before the STFT: vocos lets torch.stft(center=True) pad
# n_fft // 2; the BigVGAN recipe pads (n_fft - hop) / 2 itself and runs the STFT with center=False.
_PADDING: dict[MelKind, int] = {"vocos": N_FFT // 2, "bigvgan": (N_FFT - HOP_LENGTH) // 2}
_LOG_FLOOR = 1e-5
_BIGVGAN_MAGNITUDE_EPS = 1e-9
_HALF_DTYPES = (torch.float16, torch.bfloat16)


def check_mel_kind(kind: str) -> MelKind:
    """Return `kind` if it names a mel convention, else raise.

    Raises:
        ValueError: `kind` is not one of `MEL_KINDS`.
    """
    if kind not in MEL_KINDS:
        raise ValueError(f"unknown mel kind {kind!r}; expected one of {', '.join(map(repr, MEL_KINDS))}")
    return kind


def min_samples(kind: str = "vocos") -> int:
    """The shortest waveform `log_mel` accepts: reflect padding needs more samples than it pads."""
    return _PADDING[check_mel_kind(kind)] + 1


def frames_for_samples(num_samples: int, kind: str = "vocos") -> int:
    """Number of mel frames `log_mel` returns for a waveform of `num_samples` samples.

    "vocos": `1 + num_samples // HOP_LENGTH`; "bigvgan": `num_samples // HOP_LENGTH`.

    Raises:
        ValueError: unknown `kind`, or `num_samples` below `min_samples(kind)`.
    """
    mel_kind = check_mel_kind(kind)
    if num_samples < min_samples(mel_kind):
        raise ValueError(
            f"{num_samples} samples is too short for a {mel_kind!r} mel: need at least {min_samples(mel_kind)}"
        )
    return 1 + (num_samples + 2 * _PADDING[mel_kind] - N_FFT) // HOP_LENGTH


def samples_for_frames(num_frames: int, kind: str = "vocos") -> int:
    """Number of samples that `num_frames` mel frames span, which is what a vocoder makes of them.

    "vocos": `(num_frames - 1) * HOP_LENGTH` (what Vocos' ISTFT head returns); "bigvgan":
    `num_frames * HOP_LENGTH` (what BigVGAN's 256x upsampler returns). It inverts `frames_for_samples`:
    `frames_for_samples(samples_for_frames(n, kind), kind) == n` whenever the waveform is long enough.

    Raises:
        ValueError: unknown `kind`, or `num_frames` < 1.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be at least 1, got {num_frames}")
    return (num_frames - 1) * HOP_LENGTH + N_FFT - 2 * _PADDING[check_mel_kind(kind)]


def frame_center_offset(kind: str = "vocos") -> int:
    """Sample index on which mel frame 0 is centred; frame i is centred on `offset + i * HOP_LENGTH`.

    0 for "vocos"; `HOP_LENGTH // 2` (128) for "bigvgan", whose padding is half a hop short of a centred STFT.
    """
    return N_FFT // 2 - _PADDING[check_mel_kind(kind)]


def mel_filterbank(kind: str = "vocos") -> Tensor:
    """The triangular mel filterbank of a mel convention, as torchaudio builds it (CPU, float32).

    For "bigvgan" this equals `librosa.filters.mel(sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=12000).T` up
    to float32 rounding (about 1e-7 absolute, weights peak at 0.03); for "vocos", the same call with `htk=True,
    norm=None` (about 7e-6, weights peak at 1).

    Returns:
        Tensor `[N_FFT // 2 + 1, N_MELS]` (513 x 100): column m is the weights of mel channel m.
    """
    options = FILTERBANK_OPTIONS[check_mel_kind(kind)]
    return torchaudio.functional.melscale_fbanks(
        N_FFT // 2 + 1, F_MIN, F_MAX, N_MELS, SAMPLE_RATE, norm=options.norm, mel_scale=options.mel_scale
    )


def log_mel(waveform: Tensor, kind: str = "vocos") -> Tensor:
    """Natural-log mel spectrogram of 24 kHz audio, as F5-TTS's `MelSpec` computes it.

    "vocos" (bit for bit): torchaudio `MelSpectrogram` (periodic Hann window, `center=True` reflect padding,
    magnitude, HTK mel scale without normalisation). "bigvgan": reflect-pad by 384, STFT with `center=False`,
    magnitude `sqrt(re^2 + im^2 + 1e-9)`, Slaney-scale Slaney-normalised filterbank; F5-TTS takes that filterbank
    from librosa and f5lite from torchaudio, which moves log values by up to about 3e-5. Both end with
    `log(clamp(mel, 1e-5))`.

    Runs on the waveform's device. float16 and bfloat16 input is computed in float32 (the STFT is not available
    or not accurate in half precision) and the result cast back; float64 stays float64. The STFT window and
    filterbank are built once per (device, dtype) and reused.

    Args:
        waveform: `[batch, samples]` or `[samples]` (treated as batch 1), floating point, 24 kHz.
        kind: "vocos" or "bigvgan".

    Returns:
        Tensor `[batch, frames, N_MELS]` in the waveform's dtype, with `frames = frames_for_samples(samples, kind)`.

    Raises:
        ValueError: unknown `kind`, a waveform that is not 1-D or 2-D, or fewer than `min_samples(kind)` samples.
        TypeError: a waveform that is not floating point.
    """
    mel_kind = check_mel_kind(kind)
    if waveform.dim() == 1:
        waveform = waveform.unsqueeze(0)
    if waveform.dim() != 2:
        raise ValueError(f"waveform must be [batch, samples] or [samples], got shape {tuple(waveform.shape)}")
    if not waveform.is_floating_point():
        raise TypeError(f"waveform must be floating point, got {waveform.dtype}")
    if waveform.shape[-1] < min_samples(mel_kind):
        raise ValueError(
            f"waveform of {waveform.shape[-1]} samples is too short for a {mel_kind!r} mel: "
            f"need at least {min_samples(mel_kind)}"
        )
    compute_dtype = torch.float32 if waveform.dtype in _HALF_DTYPES else waveform.dtype
    audio = waveform.to(compute_dtype)
    mel = _vocos_mel(audio) if mel_kind == "vocos" else _bigvgan_mel(audio)
    return mel.clamp(min=_LOG_FLOOR).log().transpose(1, 2).to(waveform.dtype)


def _vocos_mel(audio: Tensor) -> Tensor:
    """Linear-magnitude vocos mel `[b, N_MELS, frames]` of `audio` `[b, samples]`."""
    return _mel_transform(audio.device, audio.dtype)(audio)


def _bigvgan_mel(audio: Tensor) -> Tensor:
    """Linear-magnitude bigvgan mel `[b, N_MELS, frames]` of `audio` `[b, samples]`."""
    basis, window = _bigvgan_tensors(audio.device, audio.dtype)
    pad = _PADDING["bigvgan"]
    # 1-D reflect padding wants a channel dimension.
    padded = F.pad(audio.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    spec = torch.stft(
        padded,
        N_FFT,
        hop_length=HOP_LENGTH,
        win_length=WIN_LENGTH,
        window=window,
        center=False,
        normalized=False,
        onesided=True,
        return_complex=True,
    )
    magnitude = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + _BIGVGAN_MAGNITUDE_EPS)
    return torch.matmul(basis, magnitude)


@functools.cache
def _mel_transform(device: torch.device, dtype: torch.dtype) -> torchaudio.transforms.MelSpectrogram:
    """F5-TTS's vocos `MelSpectrogram` module on `device` in `dtype` (built once per pair)."""
    options = FILTERBANK_OPTIONS["vocos"]
    # The first call may happen under inference_mode; buffers made there could not be saved for backward later.
    with torch.inference_mode(False):
        transform = torchaudio.transforms.MelSpectrogram(
            sample_rate=SAMPLE_RATE,
            n_fft=N_FFT,
            win_length=WIN_LENGTH,
            hop_length=HOP_LENGTH,
            f_min=F_MIN,
            f_max=F_MAX,
            n_mels=N_MELS,
            power=1,
            center=True,
            pad_mode="reflect",
            normalized=False,
            norm=options.norm,
            mel_scale=options.mel_scale,
        )
        return transform.to(device=device, dtype=dtype)


@functools.cache
def _bigvgan_tensors(device: torch.device, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """The bigvgan mel basis `[N_MELS, N_FFT // 2 + 1]` and periodic Hann window on `device` in `dtype`."""
    with torch.inference_mode(False):  # same reason as in _mel_transform
        basis = mel_filterbank("bigvgan").T.contiguous().to(device=device, dtype=dtype)
        window = torch.hann_window(WIN_LENGTH, device=device, dtype=dtype)
    return basis, window

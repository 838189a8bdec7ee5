"""log_mel: F5-TTS's vocos and bigvgan mel conventions, frame counts, dtypes and the transform cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from f5lite.audio import HOP_LENGTH, N_MELS, frames_for_samples, log_mel, mel_filterbank, samples_for_frames
from f5lite.audio import mel as mel_module

# ref_wav item 1 is 6912 real samples followed by zero padding; its mel has 1 + 6912 // 256 = 28 real frames.
ITEM1_SAMPLES = 6912
ITEM1_FRAMES = 28


@pytest.fixture(scope="module")
def ref() -> dict[str, torch.Tensor]:
    """F5-TTS's `ref_wav` (2, 9984) and its vocos mel `ref_wav_mel` (2, 40, 100); see the assets README."""
    return load_file(Path(__file__).parent / "assets" / "f5tts_compat" / "ref_wav_mel.safetensors")


def test_vocos_log_mel_matches_f5tts(ref: dict[str, torch.Tensor]) -> None:
    wav, expected = ref["ref_wav"], ref["ref_wav_mel"]

    item0 = log_mel(wav[0:1])
    assert item0.shape == (1, 40, N_MELS)
    assert (item0 - expected[0:1]).abs().max() <= 1e-5

    item1 = log_mel(wav[1:2, :ITEM1_SAMPLES])
    assert item1.shape == (1, ITEM1_FRAMES, N_MELS)
    assert (item1 - expected[1:2, :ITEM1_FRAMES]).abs().max() <= 1e-5


def test_one_dimensional_input_is_batch_of_one(ref: dict[str, torch.Tensor]) -> None:
    wav = ref["ref_wav"][0]
    mel = log_mel(wav)
    assert mel.shape == (1, 40, N_MELS)
    assert torch.equal(mel, log_mel(wav.unsqueeze(0)))


def test_batched_items_are_independent(ref: dict[str, torch.Tensor]) -> None:
    batch = log_mel(ref["ref_wav"])
    assert batch.shape == (2, 40, N_MELS)
    torch.testing.assert_close(batch[0], log_mel(ref["ref_wav"][0])[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("kind", "num_samples", "frames"),
    [
        ("vocos", 513, 3),
        ("vocos", 767, 3),
        ("vocos", 768, 4),
        ("vocos", 9984, 40),
        ("bigvgan", 385, 1),
        ("bigvgan", 511, 1),
        ("bigvgan", 512, 2),
        ("bigvgan", 9984, 39),
        ("bigvgan", 10000, 39),
    ],
)
def test_frame_counts(kind: str, num_samples: int, frames: int) -> None:
    assert frames_for_samples(num_samples, kind) == frames
    assert log_mel(torch.randn(num_samples), kind).shape == (1, frames, N_MELS)


@pytest.mark.parametrize(("kind", "frames", "samples"), [("vocos", 40, 39 * 256), ("bigvgan", 39, 39 * 256)])
def test_samples_for_frames_inverts_frames_for_samples(kind: str, frames: int, samples: int) -> None:
    assert samples_for_frames(frames, kind) == samples
    assert frames_for_samples(samples, kind) == frames
    assert frames_for_samples(samples - 1, kind) == frames - 1


def test_unknown_kind_names_the_allowed_kinds() -> None:
    with pytest.raises(ValueError, match="'vocos', 'bigvgan'"):
        log_mel(torch.randn(2048), kind="hifigan")
    with pytest.raises(ValueError, match="'vocos', 'bigvgan'"):
        frames_for_samples(2048, "hifigan")


def test_rejects_bad_waveforms() -> None:
    with pytest.raises(ValueError, match="shape"):
        log_mel(torch.randn(1, 1, 2048))
    with pytest.raises(TypeError, match="floating point"):
        log_mel(torch.zeros(2048, dtype=torch.int16))
    with pytest.raises(ValueError, match="at least 513"):
        log_mel(torch.randn(512))
    with pytest.raises(ValueError, match="at least 385"):
        log_mel(torch.randn(384), kind="bigvgan")


def test_filterbanks_match_librosa() -> None:
    librosa = pytest.importorskip("librosa")
    # torchaudio builds the filters in float32 and librosa in float64: observed differences are 1.1e-7 for the
    # Slaney filters (peak weight 0.029) and 7e-6 for the HTK ones (peak weight 1.0), i.e. a few float32 ulps.
    # A wrong scale, norm or band edge moves weights by orders of magnitude more.
    slaney = librosa.filters.mel(sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=12000)
    torch.testing.assert_close(mel_filterbank("bigvgan"), torch.from_numpy(slaney).T, rtol=0, atol=1e-6)
    htk = librosa.filters.mel(sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=12000, htk=True, norm=None)
    torch.testing.assert_close(mel_filterbank("vocos"), torch.from_numpy(htk).T, rtol=0, atol=3e-5)


def test_bigvgan_log_mel_matches_reference_recipe(ref: dict[str, torch.Tensor]) -> None:
    librosa = pytest.importorskip("librosa")
    wav = ref["ref_wav"]
    # The BigVGAN recipe as F5-TTS writes it, with librosa's filterbank.
    basis = torch.from_numpy(librosa.filters.mel(sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=None))
    padded = F.pad(wav.unsqueeze(1), (384, 384), mode="reflect").squeeze(1)
    spec = torch.stft(padded, 1024, hop_length=256, window=torch.hann_window(1024), center=False, return_complex=True)
    magnitude = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + 1e-9)
    expected = torch.log(torch.clamp(basis @ magnitude, min=1e-5)).transpose(1, 2)

    mel = log_mel(wav, kind="bigvgan")
    assert mel.shape == (2, wav.shape[1] // HOP_LENGTH, N_MELS)
    # Only the filterbank differs (torchaudio's float32 construction vs librosa's float64): observed max 2.7e-5
    # on this clip. A wrong pad, window, magnitude or norm moves log values by 1e-2 or more.
    assert (mel - expected).abs().max() <= 1e-4


@pytest.mark.parametrize("kind", ["vocos", "bigvgan"])
def test_dtypes(ref: dict[str, torch.Tensor], kind: str) -> None:
    wav = ref["ref_wav"][0:1]

    double = log_mel(wav.double(), kind)
    assert double.dtype == torch.float64
    # float32 rounding of the float32 path: observed 1.4e-5.
    torch.testing.assert_close(double.float(), log_mel(wav, kind), rtol=0, atol=1e-4)

    # Half input is computed in float32 and only the result is rounded to half.
    half = wav.half()
    assert torch.equal(log_mel(half, kind), log_mel(half.float(), kind).half())


def test_transform_is_built_once_per_device_and_dtype() -> None:
    mel_module._mel_transform.cache_clear()
    wav = torch.randn(4096)
    log_mel(wav)
    log_mel(wav)
    log_mel(wav.double())
    info = mel_module._mel_transform.cache_info()
    assert (info.misses, info.hits) == (2, 1)


def test_cache_built_under_inference_mode_still_supports_autograd() -> None:
    mel_module._mel_transform.cache_clear()
    with torch.inference_mode():
        log_mel(torch.randn(4096))
    wav = torch.randn(4096, requires_grad=True)
    log_mel(wav).sum().backward()
    assert wav.grad is not None and torch.isfinite(wav.grad).all()


def test_sine_energy_lands_in_the_right_mel_channel() -> None:
    # A 1 kHz tone must peak in the vocos channel whose HTK-mel centre is nearest 1 kHz.
    t = torch.arange(24000) / 24000
    mel = log_mel(0.5 * torch.sin(2 * math.pi * 1000 * t))
    peak_channel = int(mel[0, 10:-10].mean(0).argmax())
    centres = mel_filterbank("vocos").argmax(0) * 24000 / 1024
    assert abs(float(centres[peak_channel]) - 1000) < 24000 / 1024

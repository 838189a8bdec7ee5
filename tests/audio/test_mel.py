"""log_mel: F5-TTS's vocos and bigvgan mel conventions, frame counts, dtypes and the transform cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from support.golden import assert_golden

from f5lite.audio import HOP_LENGTH, N_MELS, frames_for_samples, log_mel, mel_filterbank, samples_for_frames
from f5lite.audio import mel as mel_module

# ref_wav item 1 is 6912 real samples followed by zero padding; its mel has 1 + 6912 // 256 = 28 real frames.
ITEM1_SAMPLES = 6912
ITEM1_FRAMES = 28

# A float32 log-mel is a log of sums (an FFT, then a filter bank) that round in proportion to a frame's loudest bins:
# a quiet bin's error, relative to its own energy, is that rounding times loudest / quiet, and the log turns it into
# an absolute error. Recomputed in float64, F5-TTS's float32 fixture is off by up to 81 epsilon of the log-mel's
# range (5.3e-5 for |log-mel| <= 5.5); another correct float32 computation can sit as far on the other side. 256
# epsilon (1.7e-4) covers both with margin. A wrong pad, window, magnitude, norm or clamp moves values by 1e-2.
LOG_MEL = {"range_ulps": 256}


@pytest.fixture(scope="module")
def ref() -> dict[str, torch.Tensor]:
    """F5-TTS's `ref_wav` (2, 9984) and its vocos mel `ref_wav_mel` (2, 40, 100); see the assets README."""
    return load_file(Path(__file__).parents[1] / "assets" / "f5tts_compat" / "ref_wav_mel.safetensors")


@pytest.mark.golden
def test_vocos_log_mel_matches_f5tts(ref: dict[str, torch.Tensor]) -> None:
    wav, expected = ref["ref_wav"], ref["ref_wav_mel"]

    item0 = log_mel(wav[0:1])
    assert item0.shape == (1, 40, N_MELS)
    assert_golden(item0, expected[0:1], **LOG_MEL, what="vocos item 0")

    item1 = log_mel(wav[1:2, :ITEM1_SAMPLES])
    assert item1.shape == (1, ITEM1_FRAMES, N_MELS)
    assert_golden(item1, expected[1:2, :ITEM1_FRAMES], **LOG_MEL, what="vocos item 1")


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


@pytest.mark.golden
def test_filterbanks_match_librosa() -> None:
    librosa = pytest.importorskip("librosa")
    # torchaudio builds the filters in float32 from float32 mel-scale edges; librosa builds them in float64 and rounds
    # once. A filter's weight is a difference of edges over a band width, so the edges' rounding is divided by narrow
    # bands: measured 34 epsilon of the peak weight (Slaney, peak 0.029) and 59 to 75 (HTK, peak 1.0; avx2 and portable
    # kernels). 256 epsilon of the
    # peak is that with margin (the HTK test allowed 3e-5 before, now 3.05e-5; Slaney 1e-6, now 8.8e-7). A wrong
    # scale, norm or band edge moves weights by orders of magnitude more.
    slaney = librosa.filters.mel(sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=12000, dtype="float64")
    assert_golden(mel_filterbank("bigvgan"), torch.from_numpy(slaney).T.float(), range_ulps=256, what="slaney")
    htk = librosa.filters.mel(
        sr=24000, n_fft=1024, n_mels=100, fmin=0, fmax=12000, htk=True, norm=None, dtype="float64"
    )
    assert_golden(mel_filterbank("vocos"), torch.from_numpy(htk).T.float(), range_ulps=256, what="htk")


@pytest.mark.golden
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
    # The filter banks differ by their construction's rounding (above) on top of the log-mel's own. Item 1's zero
    # padding clamps to log(1e-5) = -11.5, twice the loud bins' magnitude that sets the rounding, so half LOG_MEL's
    # epsilons keep the bound where it is for the vocos fixture (1.7e-4; the test allowed 1e-4 absolute before).
    assert_golden(mel, expected, range_ulps=128, what="bigvgan recipe")


@pytest.mark.parametrize("kind", ["vocos", "bigvgan"])
def test_dtypes(ref: dict[str, torch.Tensor], kind: str) -> None:
    wav = ref["ref_wav"][0:1]

    double = log_mel(wav.double(), kind)
    assert double.dtype == torch.float64
    # The float32 path against the float64 one: only float32's rounding (the test allowed 1e-4 absolute before).
    assert_golden(log_mel(wav, kind), double.float(), **LOG_MEL, what=f"{kind} float32 vs float64")

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

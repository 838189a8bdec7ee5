"""load_audio / save_audio: formats, channel mixing, resampling, and clear errors for bad files."""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from f5lite.audio import AudioError, decode_audio, load_audio, save_audio
from f5lite.audio.resample import ResampleStream
from f5lite.serve.encoding import StreamEncoder, with_flac_total


def sine(freq: float, seconds: float, rate: int, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * math.pi * freq * t)).astype(np.float32)


def peak_frequency(wave: torch.Tensor, rate: int) -> float:
    return float(torch.fft.rfft(wave).abs().argmax()) * rate / wave.shape[-1]


def test_stereo_is_mixed_to_the_channel_mean(tmp_path: Path) -> None:
    left, right = sine(300, 0.5, 24000), sine(700, 0.5, 24000, amplitude=0.25)
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([left, right], axis=1), 24000, subtype="FLOAT")

    wave = load_audio(path)

    assert wave.shape == (12000,) and wave.dtype == torch.float32
    torch.testing.assert_close(wave, torch.from_numpy((left + right) / 2), rtol=0, atol=1e-7)


def test_other_rates_are_resampled(tmp_path: Path) -> None:
    path = tmp_path / "16k.wav"
    sf.write(path, sine(1000, 1.0, 16000), 16000, subtype="FLOAT")

    wave = load_audio(path)

    assert wave.shape == (24000,)
    # One second of audio: the FFT bins are 1 Hz apart.
    assert abs(peak_frequency(wave, 24000) - 1000) <= 1
    assert abs(float(wave.pow(2).mean().sqrt()) - 0.5 / math.sqrt(2)) < 0.01
    assert load_audio(path, sample_rate=16000).shape == (16000,)


@pytest.mark.parametrize(
    ("suffix", "file_format", "subtype", "atol"),
    [
        (".wav", "WAV", "PCM_16", 1 / 2**15),
        (".wav", "WAV", "PCM_24", 1 / 2**23),
        (".wav", "WAV", "FLOAT", 0.0),
        (".wav", "WAV", "DOUBLE", 1e-7),
        (".flac", "FLAC", "PCM_16", 1 / 2**15),
        (".ogg", "OGG", "VORBIS", None),
    ],
)
def test_formats(tmp_path: Path, suffix: str, file_format: str, subtype: str, atol: float | None) -> None:
    if not sf.check_format(file_format, subtype):
        pytest.skip(f"this libsndfile cannot write {file_format}/{subtype}")
    original = sine(440, 0.5, 24000)
    path = tmp_path / f"tone{suffix}"
    sf.write(path, original, 24000, subtype=subtype)

    wave = load_audio(path)

    assert wave.dtype == torch.float32 and wave.dim() == 1
    if atol is None:  # lossy codec: compare pitch and level only
        assert abs(peak_frequency(wave, 24000) - 440) <= 4
        assert abs(float(wave.pow(2).mean().sqrt()) - 0.5 / math.sqrt(2)) < 0.02
    else:
        torch.testing.assert_close(wave, torch.from_numpy(original), rtol=0, atol=atol)


def test_int16_samples_are_scaled_to_unit_range(tmp_path: Path) -> None:
    path = tmp_path / "int16.wav"
    sf.write(path, np.array([0, 16384, -32768, 32767], dtype=np.int16), 24000, subtype="PCM_16")

    wave = load_audio(path)

    torch.testing.assert_close(wave, torch.tensor([0.0, 0.5, -1.0, 32767 / 32768]), rtol=0, atol=0)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.wav"
    with pytest.raises(AudioError, match=re.escape(f"'{path}': no such file")):
        load_audio(path)


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="is a directory"):
        load_audio(tmp_path)


def test_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.wav"
    path.write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(AudioError, match=re.escape(f"'{path}'")) as info:
        load_audio(path)
    assert "\n" not in str(info.value)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.wav"
    sf.write(path, np.zeros((0, 1), dtype=np.float32), 24000)
    with pytest.raises(AudioError, match=re.escape(f"'{path}': it contains no samples")):
        load_audio(path)


def test_audio_error_is_a_value_error() -> None:
    assert issubclass(AudioError, ValueError)


def test_bad_sample_rate(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sample_rate"):
        load_audio(tmp_path / "x.wav", sample_rate=0)


def test_save_round_trip_mono_and_multichannel(tmp_path: Path) -> None:
    mono = torch.from_numpy(sine(440, 0.25, 24000))
    save_audio(tmp_path / "mono.wav", mono, 24000, subtype="FLOAT")
    data, rate = sf.read(tmp_path / "mono.wav", dtype="float32")
    assert rate == 24000
    np.testing.assert_array_equal(data, mono.numpy())

    stereo = torch.stack([mono, -mono]).double()
    save_audio(tmp_path / "stereo.flac", stereo, 16000)
    data, rate = sf.read(tmp_path / "stereo.flac", dtype="float32")
    assert rate == 16000 and data.shape == (mono.shape[0], 2)
    np.testing.assert_allclose(data[:, 1], -mono.numpy(), atol=1 / 2**15)


def test_save_clips_integer_formats(tmp_path: Path) -> None:
    save_audio(tmp_path / "loud.wav", torch.tensor([0.5, 1.5, -3.0]), 24000)
    data, _ = sf.read(tmp_path / "loud.wav", dtype="float32")
    np.testing.assert_allclose(data, [0.5, 1.0, -1.0], atol=1 / 2**15)


def test_save_errors(tmp_path: Path) -> None:
    wave = torch.zeros(100)
    missing_dir = tmp_path / "missing" / "out.wav"
    with pytest.raises(AudioError, match="does not exist"):
        save_audio(missing_dir, wave, 24000)
    with pytest.raises(AudioError, match=re.escape(f"'{tmp_path / 'out.xyz'}'")):
        save_audio(tmp_path / "out.xyz", wave, 24000)
    with pytest.raises(ValueError, match="shape"):
        save_audio(tmp_path / "out.wav", torch.zeros(1, 1, 100), 24000)
    with pytest.raises(ValueError, match="sample_rate"):
        save_audio(tmp_path / "out.wav", wave, 0)
    assert not os.path.exists(tmp_path / "out.wav")


def flac_of_unknown_length(seconds: float) -> bytes:
    """A streamed FLAC (24 kHz) whose header leaves its length unknown, holding `seconds` of silence."""
    encoder = StreamEncoder("flac", round(seconds * 24_000))
    return with_flac_total(encoder.feed(torch.zeros(round(seconds * 24_000))) + encoder.finish(), 0)


@pytest.mark.parametrize(
    ("rate", "channels", "words"),
    [
        (1, 1, "its sample rate is 1 Hz; audio must be 8,000 to 192,000 Hz"),
        (7_999, 1, "its sample rate is 7,999 Hz"),
        (192_001, 1, "its sample rate is 192,001 Hz"),
        (16_000, 9, "it has 9 channels; at most 8 are read"),
    ],
)
def test_a_header_outside_the_limits_is_refused_before_decoding(tmp_path: Path, rate, channels, words) -> None:
    path = tmp_path / "odd.wav"
    sf.write(path, np.zeros((max(rate // 10, 1), channels), np.float32), rate)
    with pytest.raises(AudioError, match=re.escape(words)):
        load_audio(path)
    for limit in (8_000, 192_000):  # the bounds themselves are read
        sf.write(path, np.zeros((limit // 10, 8), np.float32), limit)
        assert load_audio(path).shape == (2400,)


def test_the_length_limit_holds_on_the_header_and_while_decoding(tmp_path: Path) -> None:
    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(16_000 * 20, np.float32), 16_000)
    with pytest.raises(AudioError, match=r"is 20.0 s long; the most accepted is 15 s"):
        load_audio(path, max_seconds=15)
    assert load_audio(path, max_seconds=20).shape == (24_000 * 20,)
    # A header that does not know the length (libsndfile takes it for endless): stopped as the samples pass it.
    unknown = flac_of_unknown_length(20.0)
    assert sf.info(io.BytesIO(unknown)).frames > 1 << 62
    with pytest.raises(AudioError, match=r"decodes to more than 15 s, the most accepted"):
        decode_audio(unknown, "the clip", max_seconds=15)
    # (libsndfile cannot read such a FLAC to its end at all: one within the limit is refused there, in one line.)
    with pytest.raises(AudioError, match=r"cannot read the clip: "):
        decode_audio(flac_of_unknown_length(2.0), "the clip", max_seconds=15)


def test_an_odd_rate_resamples_in_linear_cost(tmp_path: Path) -> None:
    # 44,101 Hz shares no factor with 24,000: a sinc kernel for the exact ratio would be gigabytes.
    path = tmp_path / "odd.wav"
    sf.write(path, sine(1000, 1.0, 44_101), 44_101, subtype="FLOAT")
    wave = load_audio(path)
    assert wave.shape == (24_000,)
    assert abs(peak_frequency(wave, 24_000) - 1000) <= 1
    streamed = ResampleStream(44_101, 24_000)
    blocks = torch.from_numpy(sine(1000, 1.0, 44_101)).split(10_000)
    joined = torch.cat([streamed.feed(b, last=i + 1 == len(blocks)) for i, b in enumerate(blocks)])
    torch.testing.assert_close(joined, wave, rtol=0, atol=0)  # block by block, the same samples

"""normalize_rms / restore_rms: F5-TTS's reference loudness handling."""

from __future__ import annotations

import pytest
import torch

from f5lite.audio import TARGET_RMS, normalize_rms, restore_rms


def rms(wave: torch.Tensor) -> float:
    return float(wave.pow(2).mean().sqrt())


def clip_with_rms(value: float) -> torch.Tensor:
    wave = torch.randn(1, 24000, generator=torch.Generator().manual_seed(0))
    return wave * (value / rms(wave))


def test_quiet_clip_is_boosted_and_restored() -> None:
    quiet = clip_with_rms(0.02)

    boosted, original = normalize_rms(quiet)

    assert original == pytest.approx(0.02, rel=1e-5)
    assert rms(boosted) == pytest.approx(TARGET_RMS, rel=1e-5)
    # F5-TTS's own expression, bit for bit.
    f5_rms = torch.sqrt(torch.mean(torch.square(quiet)))
    assert torch.equal(boosted, quiet * TARGET_RMS / f5_rms)
    # Generated audio at the boosted loudness comes back at the reference's loudness.
    torch.testing.assert_close(restore_rms(boosted, original), quiet, rtol=1e-5, atol=1e-7)


def test_loud_clip_is_left_alone() -> None:
    loud = clip_with_rms(0.3)

    same, original = normalize_rms(loud)

    assert same is loud
    assert original == pytest.approx(0.3, rel=1e-5)
    generated = torch.randn(1, 1000)
    assert restore_rms(generated, original) is generated


def test_custom_target() -> None:
    boosted, original = normalize_rms(clip_with_rms(0.1), target_rms=0.2)
    assert rms(boosted) == pytest.approx(0.2, rel=1e-5)
    torch.testing.assert_close(restore_rms(boosted, original, target_rms=0.2), clip_with_rms(0.1))


def test_silence_is_left_alone() -> None:
    silence = torch.zeros(1, 24000)

    same, original = normalize_rms(silence)

    assert original == 0.0
    assert same is silence and not torch.isnan(same).any()
    generated = torch.randn(1, 1000)
    assert restore_rms(generated, original) is generated


def test_rejects_non_positive_target() -> None:
    with pytest.raises(ValueError, match="target_rms"):
        normalize_rms(torch.ones(10), target_rms=0.0)
    with pytest.raises(ValueError, match="target_rms"):
        restore_rms(torch.ones(10), 0.05, target_rms=-1.0)

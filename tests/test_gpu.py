"""Checks that need a CUDA device (marked `gpu`, skipped automatically without one): the front ends on the GPU."""

import pytest
import torch

from f5lite.audio import GriffinLimVocoder, log_mel


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["vocos", "bigvgan"])
def test_log_mel_on_cuda_matches_cpu(kind):
    wave = torch.randn(2, 24000, generator=torch.Generator().manual_seed(0)) * 0.1
    cpu = log_mel(wave, kind=kind)
    gpu = log_mel(wave.cuda(), kind=kind)
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
def test_griffin_lim_runs_on_cuda():
    mel = log_mel(torch.randn(1, 24000) * 0.1).cuda()
    wave = GriffinLimVocoder().cuda().decode(mel)
    assert wave.device.type == "cuda" and wave.shape == (1, (mel.shape[1] - 1) * 256)
    assert torch.isfinite(wave).all()

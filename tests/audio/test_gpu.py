"""Checks that need a CUDA device (marked `gpu`, skipped automatically without one): the front ends on the GPU."""

import pytest
import torch
from support.golden import assert_golden

from f5lite.audio import GriffinLimVocoder, log_mel


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["vocos", "bigvgan"])
def test_log_mel_on_cuda_matches_cpu(kind):
    wave = torch.randn(2, 24000, generator=torch.Generator().manual_seed(0)) * 0.1
    cpu = log_mel(wave, kind=kind)
    gpu = log_mel(wave.cuda(), kind=kind)
    assert gpu.device.type == "cuda"
    # cuFFT and the CPU FFT sum in other orders; a bound in epsilon as loose as the 1e-4 + 1e-4 relative this test
    # allowed before (no GPU was lent when it was rewritten to measure a tighter one).
    assert_golden(gpu.cpu(), cpu, ulps=1024, range_ulps=256, what=f"{kind} cuda vs cpu")


@pytest.mark.gpu
def test_griffin_lim_runs_on_cuda():
    mel = log_mel(torch.randn(1, 24000) * 0.1).cuda()
    wave = GriffinLimVocoder().cuda().decode(mel)
    assert wave.device.type == "cuda" and wave.shape == (1, (mel.shape[1] - 1) * 256)
    assert torch.isfinite(wave).all()


@pytest.mark.gpu
@pytest.mark.golden
@pytest.mark.parametrize("name", ["dit_tiny", "mmdit_tiny", "unett_tiny"])
def test_fixture_outputs_on_cuda(assets, name, monkeypatch):
    from safetensors.torch import load_file
    from support.f5tts_fixtures import build_fixture_model

    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # F5-TTS's goldens are true float32
    model = build_fixture_model(assets, name).cuda()
    io = {k: v.cuda() for k, v in load_file(assets / "f5tts_compat" / f"{name}.io.safetensors").items()}
    with torch.no_grad():
        out = model(io["x"], io["cond"], io["text"], io["time"], mask=io["mask"])
    # As loose as the former 1e-4 + 1e-4 relative (|out| <= 2.5), in epsilon; not yet measured on a GPU.
    assert_golden(out.cpu(), io["out_cond"].cpu(), ulps=1024, range_ulps=384, what=f"{name} cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["full", "selective"])
def test_inductor_compile_with_ac_in_bf16_on_cuda(mode):
    from support.tiny_models import tiny_backbone, tiny_batch

    import f5lite

    torch._dynamo.reset()
    eager, fast = tiny_backbone("dit").cuda(), tiny_backbone("dit").cuda()
    f5lite.apply_ac(fast, mode, 1)
    f5lite.apply_compile(fast)
    batch = {k: v.cuda() for k, v in tiny_batch(n=128).items()}
    outs = []
    for model in (eager, fast):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(batch["x"], batch["cond"], batch["text"], batch["time"], mask=batch["mask"])
        out.float().pow(2).mean().backward()
        outs.append(out.float())

    # Both run their matmuls in bf16 (8 significant bits, relative rounding 2**-9 ~ 2e-3 per op) but round in
    # different places (inductor fuses, recomputation re-rounds); over 4 blocks the errors add up to a few 1e-3 of
    # a tensor's norm. 2e-2 of the norm leaves room for that and still fails a wrong gradient, which is off by
    # the order of the norm itself. (An absolute tolerance would not: these gradients' median is about 1e-4.)
    def assert_near(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
        error = (actual.float() - expected.float()).norm().item()
        assert error <= 2e-2 * expected.float().norm().item(), f"{what}: {error:.3g} vs norm {expected.norm():.3g}"

    assert_near(outs[1], outs[0], "output")
    for (name, p), q in zip(fast.named_parameters(), eager.parameters(), strict=True):
        assert p.grad is not None and torch.isfinite(p.grad).all()
        assert_near(p.grad, q.grad, name)


@pytest.mark.gpu
def test_trainer_on_cuda_bf16_with_tf32_and_pinned_batches(tmp_path):
    from f5lite.config import compose_config
    from f5lite.train import Trainer

    overrides = ["+recipe=debug_tiny", f"run_dir={tmp_path}/run", "optim.max_updates=3", "perf.precision=bf16"]
    trainer = Trainer(compose_config([*overrides, "perf.tf32=false"]))
    assert not torch.backends.cuda.matmul.allow_tf32
    trainer = Trainer(compose_config([*overrides, "perf.tf32=true", "ckpt.async=true", f"run_dir={tmp_path}/run2"]))
    assert torch.backends.cuda.matmul.allow_tf32 and trainer.device.type == "cuda"
    batch = next(iter(trainer.data.loader))
    assert batch.mel.is_pinned() and batch.text_ids.is_pinned()  # so the copy to the GPU can be asynchronous
    trainer.fit()
    assert (tmp_path / "run2" / "export" / "model.safetensors").is_file()

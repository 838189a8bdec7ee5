"""The analytic training-FLOPs formula used for MFU agrees with torch's FLOP counter on tiny models; the peaks MFU
divides by."""

from __future__ import annotations

import pytest
import torch
from support.tiny_models import tiny_backbone
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.flops import peak_flops, per_frame_params, table_peak_flops, training_flops


@pytest.mark.parametrize("name", ["dit", "unett", "mmdit"])
def test_formula_matches_flop_counter(name: str) -> None:
    model = tiny_backbone(name)
    n, nt = 96, 24
    g = torch.Generator().manual_seed(0)
    x, cond = torch.randn(1, n, 100, generator=g), torch.randn(1, n, 100, generator=g)
    text = torch.randint(0, 40, (1, nt), generator=g)
    # The math attention kernel runs as bmm, which the counter sees (the fused CPU kernel it does not count).
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        model(x, cond, text, torch.rand(1, generator=g)).pow(2).mean().backward()
    counts = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
    matmuls = sum(v for k, v in counts.items() if "convolution" not in k)
    # The counter mis-counts grouped convolutions in backward, so compare matmuls and leave the convs out of both.
    convs = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Conv1d))
    analytic = training_flops(model, [n], [nt]) - 6 * convs * n
    # The counter also sees the per-sample matmuls (time MLP, AdaLN), which the formula leaves out by design, and
    # the weight gradient of the first layer's input projection that the 6N rule assumes.
    assert 0.9 * matmuls < analytic <= 1.02 * matmuls


def test_per_sample_weights_are_excluded() -> None:
    model = tiny_backbone("dit")
    audio, text = per_frame_params(model)
    assert text == 0
    per_sample = sum(
        m.weight.numel() for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "attn_norm" in n
    )
    total = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear | torch.nn.Conv1d))
    assert audio < total - per_sample + 1 and per_sample > 0


def test_peaks_from_the_table_or_a_measured_gemm() -> None:
    assert table_peak_flops("NVIDIA H100 80GB HBM3") == table_peak_flops("NVIDIA H200") == 989.4e12
    assert table_peak_flops("NVIDIA A100-SXM4-40GB") == 312e12 and table_peak_flops("Some Unknown GPU") is None
    peak, source = peak_flops(torch.device("cpu"), torch.float32)  # a CPU: its GEMM rate, measured
    assert 1e8 < peak < 1e14 and source.startswith("measured torch.float32 GEMM")

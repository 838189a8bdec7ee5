"""benchmarks.step_profile: where a step's time goes, from hand-made profiler rows (kernel names as CUDA and the
CPU name them), and benchmarks.models.speech_batch: the speech-like benchmark batches."""

from __future__ import annotations

import pytest

from benchmarks.models import padding_fraction, speech_batch
from benchmarks.step_profile import (
    CATEGORIES,
    EMA_RANGE,
    OPTIMIZER_RANGE,
    STEP_RANGE,
    Row,
    categorize,
    category_of,
    shares,
    union_length,
)

NAMES = {
    # attention: flash, memory-efficient (CUTLASS fmha, which a "cutlass" GEMM rule would take), cuDNN, CPU
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>": "attention",
    "fmha_cutlassB_bf16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<...>)": "attention",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0": "attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "attention",
    # GEMMs: cuBLAS on Hopper (nvjet), CUTLASS/xmma, Ampere, inductor's mm template, the CPU's
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT": "matmul",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off": "matmul",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(...)": "matmul",
    "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn": "matmul",
    "triton_tem_fused_addmm_0": "matmul",
    "aten::addmm": "matmul",
    "aten::mm": "matmul",
    # convolutions, cuDNN's implicit GEMM included
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x64x64": "convolution",
    "aten::convolution_backward": "convolution",
    # elementwise, norms, modulation, inductor's fused kernels
    "triton_poi_fused__to_copy_add_mul_0": "elementwise",
    "triton_red_fused_native_layer_norm_1": "elementwise",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(...)": "elementwise",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, ...>": "elementwise",
    "## Call CompiledFxGraph fbcx3wiq4j ##": "elementwise",
    "aten::native_layer_norm": "elementwise",
    # fused AdamW, wherever it runs
    "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor<float, 4>, ...>": "optimizer",
    # copies: memcpy, memset, fills, dtype casts
    "Memcpy DtoD (Device -> Device)": "copies",
    "Memset (Device)": "copies",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(...)>": "copies",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, ...>": "copies",
    "aten::copy_": "copies",
    "aten::_to_copy": "copies",
    # none of the above
    "ncclDevKernel_Broadcast_RING_LL": "other",
    "aten::_local_scalar_dense": "other",
}


@pytest.mark.parametrize(("name", "category"), sorted(NAMES.items()))
def test_kernel_and_operator_names_fall_in_their_category(name: str, category: str) -> None:
    assert category_of(name) == category


def test_union_counts_overlaps_once_and_clips_to_the_window() -> None:
    assert union_length([(0, 10), (5, 15), (20, 30)], (0, 100)) == 25
    assert union_length([(0, 10), (2, 3)], (0, 100)) == 10  # nested
    assert union_length([(-5, 5), (95, 120)], (0, 100)) == 10  # clipped at both ends
    assert union_length([], (0, 100)) == 0


def test_a_step_splits_into_kernels_ranges_and_idle_gaps() -> None:
    """A 100 us step: kernels with gaps and one overlap, an optimizer and an EMA range attributing theirs by time."""
    rows = [
        Row(STEP_RANGE, 0, 0, 100),
        Row("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", 20, 5, 25),  # matmul
        Row("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 15, 25, 40),  # attention
        Row("triton_poi_fused_add_mul_silu_0", 10, 35, 45),  # elementwise, overlaps the attention by 5
        Row("Memcpy DtoD (Device -> Device)", 5, 50, 55),  # copies
        Row(OPTIMIZER_RANGE, 0, 58, 80),
        Row("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>", 4, 60, 64),  # optimizer (range)
        Row("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 6, 70, 76),  # a GEMM inside the optimizer range: optimizer
        Row(EMA_RANGE, 0, 82, 98),
        Row("void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor>", 8, 85, 93),  # EMA first
    ]
    times = categorize(rows)
    assert set(times) == {*CATEGORIES, "window"} and times["window"] == 100
    assert times["matmul"] == 20 and times["attention"] == 15 and times["elementwise"] == 10
    assert times["copies"] == 5 and times["optimizer"] == 10 and times["ema"] == 8
    assert times["convolution"] == times["other"] == 0
    # busy: [5, 45] (the overlap once), [50, 55], [60, 64], [70, 76], [85, 93] = 40 + 5 + 4 + 6 + 8 = 63 us
    assert times["idle"] == pytest.approx(37)
    report = shares(times)
    assert list(report) == list(CATEGORIES)
    assert report["idle"] == {"ms": 0.037, "share": 0.37} and report["matmul"]["share"] == 0.2


def test_without_a_step_range_the_window_is_the_span_of_the_rows() -> None:
    times = categorize([Row("aten::mm", 10, 100, 110), Row("aten::add", 5, 120, 125)])
    assert times["window"] == 25 and times["idle"] == 10 and times["matmul"] == 10
    assert categorize([])["window"] == 0


def test_ranges_are_not_counted_as_work() -> None:
    """On a CPU the ranges are operators too: their time is their children's, or idle, never a category of its own."""
    times = categorize(
        [Row(STEP_RANGE, 50, 0, 50), Row(OPTIMIZER_RANGE, 30, 10, 40), Row("aten::_foreach_mul_", 20, 15, 35)]
    )
    assert times["optimizer"] == 20 and times["idle"] == 30 and sum(times[c] for c in CATEGORIES) == 50


def test_speech_batches_fill_the_padded_budget_reproducibly() -> None:
    for shape in ("bucket", "shuffled"):
        mel, text = speech_batch(shape, 38_400)
        assert (mel, text) == speech_batch(shape, 38_400)  # seeded: the same batch on every machine
        assert len(mel) * max(mel) <= 38_400 and len(mel) == len(text) > 8
        assert all(93 <= m <= 1875 for m in mel)  # 1 to 20 s at 24 kHz, hop 256
        assert text == [round(m / 6) for m in mel]
    bucket, _ = speech_batch("bucket", 38_400)
    shuffled, _ = speech_batch("shuffled", 38_400)
    assert bucket == sorted(bucket) and shuffled != sorted(shuffled)
    assert padding_fraction(bucket) < 0.15 < 0.4 < padding_fraction(shuffled)
    assert padding_fraction([100, 100]) == 0 and padding_fraction([50, 100]) == 0.25
    with pytest.raises(ValueError, match="unknown batch shape"):
        speech_batch("sorted", 100)

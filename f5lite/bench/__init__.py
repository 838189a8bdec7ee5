"""Measurement helpers for the benchmarks in `scripts/`: analytic training FLOPs, peak FLOP/s, MFU."""

from f5lite.bench.flops import PEAK_FLOPS, model_flops_utilization, per_frame_params, training_flops

__all__ = ["PEAK_FLOPS", "model_flops_utilization", "per_frame_params", "training_flops"]

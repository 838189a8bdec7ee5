"""Measurement helpers for the benchmarks in `scripts/`: analytic training FLOPs, peak FLOP/s, MFU, the shared model.

`f5lite.bench.sidebyside` (imported on its own) is the comparisons' harness: a process per run, interleaved rounds,
results files that record the machine, the versions and the date.
"""

from f5lite.bench.flops import PEAK_FLOPS, model_flops_utilization, per_frame_params, training_flops
from f5lite.bench.presets import F5TTS_VOCAB_SIZE, MID_DIT

__all__ = ["F5TTS_VOCAB_SIZE", "MID_DIT", "PEAK_FLOPS", "model_flops_utilization", "per_frame_params", "training_flops"]

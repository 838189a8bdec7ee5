"""Names of the dtypes model weights are kept in: exports, inference, the exported training result."""

from __future__ import annotations

import torch

WEIGHT_DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
"""Dtype names accepted for weights (`ckpt.export_dtype`, `f5lite-export --dtype`, `f5lite-infer dtype=`)."""

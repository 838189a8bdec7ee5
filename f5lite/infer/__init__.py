"""Inference: `Synthesizer` (Python API), model loading, text chunking, cross-fades and the `f5lite-infer` CLI."""

from f5lite.infer.chunking import chunk_text, max_chunk_bytes, prepare_ref_text
from f5lite.infer.crossfade import crossfade
from f5lite.infer.loading import LoadedModel, load_model, resolve_device
from f5lite.infer.synthesizer import Synthesizer

__all__ = [
    "LoadedModel",
    "Synthesizer",
    "chunk_text",
    "crossfade",
    "load_model",
    "max_chunk_bytes",
    "prepare_ref_text",
    "resolve_device",
]

"""What f5lite keeps on disk about models, and the one place that reads any of it back.

- `model_sources`: what is at a path (training run, f5lite export, LoRA adapter export, official checkpoint) and loading
  it; every reader of models goes through it.
- `rundir`: a training run directory's layout, frozen config and vocab.
- `store` (with `tree`): atomic, verified training checkpoints inside a run directory.
- `lora`: LoRA adapters injected with peft, and folded back into plain weights.
- `pretrained`: the export directory (`save_pretrained` / `load_pretrained`, Hugging Face style).
- `duration_files`: a duration predictor's files, beside a model or alone.

Official F5-TTS checkpoint files are read by `f5lite.models.checkpoint`. This package imports neither `f5lite.train`
nor `f5lite.infer`: both build on it.
"""

from f5lite.storage.model_sources import LoadedSource, SourceKind, Weights, identify, load_source, read_weights
from f5lite.storage.store import Checkpoint, CheckpointSaveError, CheckpointStore

__all__ = [
    "Checkpoint",
    "CheckpointSaveError",
    "CheckpointStore",
    "LoadedSource",
    "SourceKind",
    "Weights",
    "identify",
    "load_source",
    "read_weights",
]

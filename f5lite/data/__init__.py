"""Data: what training reads from a prepared directory, and the formats `f5lite-prepare` writes there.

- `manifest.jsonl` (`manifest.py`) and the log-mel cache (`mel_cache.py`): written by `f5lite.prepare`, read here.
- `ManifestDataset` and `Collate`: mels `[b, n, 100]` and text ids `[b, nt]` with their lengths.
- `FrameBudgetSampler`: F5-TTS's frame budget, reshuffled per epoch, sharded across ranks, resumable.
- `f5tts_arrow.py`: F5-TTS's own prepared datasets (`raw.arrow`, `duration.json`) read as manifest rows.
- `build_train_data`: all of the above from the `data` config section.

Checking a dataset and writing a prepared directory is `f5lite.prepare`; the shipped demo dataset is
`f5lite.paths.demo_dir`.
"""

from f5lite.data.collate import Batch, Collate
from f5lite.data.dataset import ManifestDataset, Utterance, load_rows
from f5lite.data.loader import TrainData, build_train_data
from f5lite.data.manifest import MANIFEST_NAME, REPORT_NAME, VOCAB_NAME, ManifestRow, read_manifest, write_manifest
from f5lite.data.sampler import FrameBudgetSampler

__all__ = [
    "MANIFEST_NAME",
    "REPORT_NAME",
    "VOCAB_NAME",
    "Batch",
    "Collate",
    "FrameBudgetSampler",
    "ManifestDataset",
    "ManifestRow",
    "TrainData",
    "Utterance",
    "build_train_data",
    "load_rows",
    "read_manifest",
    "write_manifest",
]

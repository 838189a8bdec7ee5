"""Data: `f5lite-prepare` (checks a dataset, writes a training directory), the dataset, frame-budget batching.

- `prepare` / `f5lite-prepare`: F5-TTS metadata.csv, LJSpeech, or a folder of audio with transcripts in;
  `manifest.jsonl`, `vocab.txt`, `report.json` (and optionally cached mels) out.
- `ManifestDataset` and `Collate`: mels `[b, n, 100]` and text ids `[b, nt]` with their lengths.
- `FrameBudgetSampler`: F5-TTS's frame budget, reshuffled per epoch, sharded across ranks, resumable.
- `build_train_data`: all of the above from the `data` config section.
- `demo_dir`: the demo dataset shipped in the package.
"""

from f5lite.data.checks import Limits
from f5lite.data.collate import Batch, Collate
from f5lite.data.dataset import ManifestDataset, Utterance, load_rows
from f5lite.data.demo import DEMO_RESOLVER, demo_dir
from f5lite.data.loader import TrainData, build_train_data
from f5lite.data.manifest import MANIFEST_NAME, REPORT_NAME, VOCAB_NAME, ManifestRow, read_manifest, write_manifest
from f5lite.data.prepare import PrepareOptions, PrepareResult, prepare
from f5lite.data.sampler import FrameBudgetSampler
from f5lite.data.skips import SKIP_REASONS, Skip
from f5lite.data.sources import LAYOUTS, read_source

__all__ = [
    "DEMO_RESOLVER",
    "LAYOUTS",
    "MANIFEST_NAME",
    "REPORT_NAME",
    "SKIP_REASONS",
    "VOCAB_NAME",
    "Batch",
    "Collate",
    "FrameBudgetSampler",
    "Limits",
    "ManifestDataset",
    "ManifestRow",
    "PrepareOptions",
    "PrepareResult",
    "Skip",
    "TrainData",
    "Utterance",
    "build_train_data",
    "demo_dir",
    "load_rows",
    "prepare",
    "read_manifest",
    "read_source",
    "write_manifest",
]

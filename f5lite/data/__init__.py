"""What training reads: data sources as lazy Lhotse CutSets, frame-budget batching, the dataset, the loader.

- `cuts`: the cut as f5lite writes and reads it (`cuts.jsonl.gz`), `make_cut`, `write_cuts`;
- `data_sources`: `open_source` recognizes a prepared directory, a Shar directory, a CutSet file, an earlier f5lite
  directory (`manifest.jsonl`) or an F5-TTS one (`raw.arrow`), each read lazily;
- `batching`: `CutBatchSampler`, frame-budget batches packed from a sorted window of the stream, exact and elastic
  resume;
- `dataset` and `collate`: `CutDataset` loads a batch of cuts (mel cache, Shar fields or audio) into a `Batch`;
- `loader`: `build_train_data`, all of the above from the `data` config section, mixing included;
- `manifest`, `mel_cache`, `shar_reader`, `f5tts_arrow`: the formats read (and, for the mel cache, written by
  `f5lite.prepare`).
"""

from f5lite.data.batching import CutBatchSampler
from f5lite.data.collate import Batch, Utterance, collate
from f5lite.data.cuts import CUTS_NAME, make_cut, write_cuts
from f5lite.data.data_sources import DataSource, open_source
from f5lite.data.dataset import CutDataset
from f5lite.data.loader import TrainData, build_train_data
from f5lite.data.manifest import MANIFEST_NAME, REPORT_NAME, VOCAB_NAME, ManifestRow, read_manifest

__all__ = [
    "CUTS_NAME",
    "MANIFEST_NAME",
    "REPORT_NAME",
    "VOCAB_NAME",
    "Batch",
    "CutBatchSampler",
    "CutDataset",
    "DataSource",
    "ManifestRow",
    "TrainData",
    "Utterance",
    "build_train_data",
    "collate",
    "make_cut",
    "open_source",
    "read_manifest",
    "write_cuts",
]

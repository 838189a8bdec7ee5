"""Training data sources, each opened as a lazy Lhotse CutSet (read one cut at a time, never held whole).

`data.dir` (or each `data.sources[i].dir`) may be:

- a directory made by `f5lite-prepare` (`cuts.jsonl.gz`, `vocab.txt`);
- a Shar directory (`f5lite-prepare --shar`, or any Lhotse Shar export: `cuts.000000.jsonl.gz`, `recording.*.tar`,
  `mel.*.tar`); only the cuts are read here, the audio or mels by the loader workers (see `f5lite.data.shar_reader`);
- a CutSet file (`*.jsonl.gz` or `*.jsonl`), e.g. from a Lhotse recipe (`lhotse prepare libritts`, `emilia`, ...)
  after `CutSet.from_manifests(...).to_file(...)`; its text is tokenized while training;
- a directory prepared by an earlier f5lite (`manifest.jsonl`), read as it is;
- an F5-TTS prepared directory (`raw.arrow` or `raw/`, `duration.json`, `vocab.txt`; needs the `f5tts` extra).

Relative audio and mel paths are resolved against the folder of the file that names them. Each source has a
fingerprint (its files and their sizes), so that a resume notices other data.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lhotse import CutSet
from lhotse.cut import Cut

from f5lite.data.cuts import CUTS_NAME, MEL_PATH, row_to_cut
from f5lite.data.manifest import MANIFEST_NAME, VOCAB_NAME, iter_manifest

F5TTS_MARKERS = ("raw.arrow", "raw")
"""Names that mark an F5-TTS prepared directory (the arrow file, or its `save_to_disk` folder)."""
SHAR_FIRST = "cuts.000000.jsonl.gz"
"""The first cuts shard of a Shar directory."""


@dataclass(frozen=True)
class DataSource:
    """One opened source.

    Attributes:
        path: as given.
        kind: `cuts`, `shar`, `manifest` or `f5tts`.
        files: the files that describe its cuts (for the fingerprint and messages).
        vocab_path: the `vocab.txt` next to it, or None.
    """

    path: Path
    kind: str
    files: tuple[Path, ...]
    vocab_path: Path | None

    def cuts(self, shard_order: list[int] | None = None) -> CutSet:
        """The cuts, lazily, with relative paths resolved.

        Args:
            shard_order: for a Shar directory, the order to read its shards in (default: as numbered).
        """
        base = self.files[0].parent
        if self.kind == "cuts":
            return CutSet.from_jsonl_lazy(self.files[0]).map(_Resolve(base))
        if self.kind == "shar":
            order = shard_order if shard_order is not None else list(range(len(self.files)))
            return CutSet.from_shar(fields={"cuts": [str(self.files[i]) for i in order]})
        if self.kind == "manifest":
            return CutSet(_ManifestCuts(self.files[0]))
        from f5lite.data.f5tts_arrow import F5TTSCuts  # needs the optional `datasets` package

        return CutSet(F5TTSCuts(self.path))

    def fingerprint(self) -> str:
        """sha256 of the source's files' names and sizes: changes when the data does."""
        digest = hashlib.sha256(self.kind.encode())
        for file in self.files:
            size = file.stat().st_size if file.is_file() else -1
            digest.update(f"{file.resolve()}\0{size}\0".encode())
        return digest.hexdigest()


def open_source(path: str | os.PathLike[str]) -> DataSource:
    """Recognize a data source (see the module docstring) without reading its cuts.

    Raises:
        ValueError: the path does not exist or holds none of the known formats (one line saying what each needs).
    """
    source = Path(path)
    if source.is_file() and (source.name.endswith(".jsonl.gz") or source.suffix == ".jsonl"):
        vocab = source.parent / VOCAB_NAME
        return DataSource(source, "cuts", (source,), vocab if vocab.is_file() else None)
    if not source.is_dir():
        what = "does not exist" if not source.exists() else "is neither a directory nor a CutSet file (*.jsonl.gz)"
        raise ValueError(f"data directory {source} {what} (make one with f5lite-prepare)")
    vocab_path = source / VOCAB_NAME if (source / VOCAB_NAME).is_file() else None
    if (source / CUTS_NAME).is_file():
        return DataSource(source, "cuts", (source / CUTS_NAME,), vocab_path)
    if (source / SHAR_FIRST).is_file():
        shards = tuple(sorted(source.glob("cuts.*.jsonl.gz")))
        return DataSource(source, "shar", shards, vocab_path)
    if (source / MANIFEST_NAME).is_file():
        return DataSource(source, "manifest", (source / MANIFEST_NAME,), vocab_path)
    if any((source / name).exists() for name in F5TTS_MARKERS):
        from f5lite.data.f5tts_arrow import open_f5tts_table  # needs the optional `datasets` package

        open_f5tts_table(source)  # a missing package or a malformed table is reported now, not mid-epoch
        files = tuple(source / name for name in (*F5TTS_MARKERS, "duration.json") if (source / name).exists())
        return DataSource(source, "f5tts", files, vocab_path)
    raise ValueError(
        f"data directory {source} holds no {CUTS_NAME} (make one with f5lite-prepare), no Shar shards "
        f"({SHAR_FIRST}), no {MANIFEST_NAME} and no F5-TTS raw.arrow"
    )


class _Resolve:
    """Makes a cut's relative audio and mel paths absolute, against the folder of its CutSet file (picklable)."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def __call__(self, cut: Cut) -> Cut:
        cut = cut.with_recording_path_prefix(self.base)
        mel = (cut.custom or {}).get(MEL_PATH)
        if mel is not None:
            cut.custom[MEL_PATH] = str(self.base / mel)
        return cut


class _ManifestCuts:
    """The rows of an earlier f5lite's `manifest.jsonl` as cuts (an iterable Lhotse reads lazily)."""

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest

    def __iter__(self) -> Iterator[Cut]:
        for row in iter_manifest(self.manifest):
            yield row_to_cut(row, self.manifest.parent)

"""The demo dataset shipped in the package: small, complete, consistent, found from any directory, trainable."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from support.data_helpers import audio_path, read_cuts

from f5lite.config import compose_config
from f5lite.data import build_train_data
from f5lite.paths import demo_dir
from f5lite.prepare import PrepareOptions, prepare
from f5lite.prepare.val_split import ValSplit
from f5lite.text import TextEncoder, load_vocab

VAL_COUNT = 12  # as scripts/make_demo_data.py holds out
SIZE_LIMIT = 5_000_000  # bytes: the demo data ships inside the package, so it stays small


def test_the_demo_is_small_and_complete():
    root = demo_dir()
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and "mels" not in p.parts]
    assert sum(p.stat().st_size for p in files) <= SIZE_LIMIT
    assert not (root / "manifest.jsonl").exists()  # one format only: the cuts
    cuts = read_cuts(root)
    assert 150 <= len(cuts) <= 300
    sources = [cut.recording.sources[0].source for cut in cuts]
    assert not any(source.startswith("/") for source in sources)  # relative: works wherever it is installed
    assert all(audio_path(cut, root).is_file() and audio_path(cut, root).suffix == ".ogg" for cut in cuts)
    assert len({cut.supervisions[0].speaker for cut in cuts}) >= 4
    assert len({cut.supervisions[0].text for cut in cuts}) >= 75
    encoder = TextEncoder("char", load_vocab(root / "vocab.txt"))
    for cut in cuts[:20]:
        encoded = encoder.encode([cut.supervisions[0].text])
        assert cut.custom["token_ids"] == encoded.ids[0].tolist() and not encoded.unknown
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    held_out = read_cuts(root / "val")
    assert len(held_out) == report["val"]["utterances"] == 12 and report["train"] == len(cuts)
    assert report["kept"] == len(cuts) + len(held_out) and report["skipped"] == []
    assert not {c.id for c in cuts} & {c.id for c in held_out}  # training never sees a held-out utterance
    assert report["outputs"] == ["cuts.jsonl.gz", "report.json", "val/cuts.jsonl.gz", "val/testset.txt", "vocab.txt"]
    assert "Licence" in (root / "ORIGIN.md").read_text(encoding="utf-8")


def test_the_committed_outputs_are_what_f5lite_prepare_makes_of_the_metadata(tmp_path):
    root = demo_dir()
    copy = tmp_path / "demo"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "mels"))
    options = PrepareOptions(workers=1, val=ValSplit(count=VAL_COUNT))  # as scripts/make_demo_data.py does
    prepare(copy / "metadata.csv", copy, options)
    for name in ("cuts.jsonl.gz", "vocab.txt", "report.json", "val/cuts.jsonl.gz", "val/testset.txt"):
        assert (copy / name).read_bytes() == (root / name).read_bytes(), name


def test_debug_tiny_finds_the_demo_from_any_directory_and_batches_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = compose_config(["+recipe=debug_tiny"])
    assert cfg.data.dir == str(demo_dir())
    train = build_train_data(cfg.data, seed=cfg.seed)
    assert train.encoder.num_embeds == len(load_vocab(demo_dir() / "vocab.txt"))
    train.sampler.set_epoch(1)
    seen: Counter[str] = Counter()
    for batch in train.loader:
        assert batch.mel.shape[0] <= cfg.data.max_samples
        assert batch.mel.shape[0] * batch.mel.shape[1] <= cfg.data.frames_per_gpu
        assert batch.mel.shape[2] == 100 and batch.text_ids.shape[0] == batch.mel.shape[0]
        assert batch.num_skipped == 0
        seen.update(batch.paths)
    assert sorted(Path(p).resolve() for p in seen) == sorted(
        audio_path(c, demo_dir()).resolve() for c in read_cuts(demo_dir())
    )
    assert set(seen.values()) == {1}

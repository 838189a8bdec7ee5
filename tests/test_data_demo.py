"""The demo dataset shipped in the package: small, complete, consistent, found from any directory, trainable."""

from __future__ import annotations

import json
from collections import Counter

from f5lite.config import compose_config
from f5lite.data import build_train_data, read_manifest
from f5lite.paths import demo_dir
from f5lite.prepare import PrepareOptions, prepare
from f5lite.text import load_vocab

SIZE_LIMIT = 5_000_000  # bytes: the demo data ships inside the package, so it stays small


def test_the_demo_is_small_and_complete():
    root = demo_dir()
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and "mels" not in p.parts]
    assert sum(p.stat().st_size for p in files) <= SIZE_LIMIT
    rows = read_manifest(root / "manifest.jsonl")
    assert 150 <= len(rows) <= 300
    assert all(r.audio_path.is_file() and r.audio_path.suffix == ".ogg" for r in rows)
    assert len({r.speaker for r in rows}) >= 4 and len({r.text for r in rows}) >= 75
    raw = [json.loads(line) for line in (root / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    assert not any(row["audio_path"].startswith("/") for row in raw)  # relative: works wherever it is installed
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    assert report["kept"] == len(rows) and report["skipped"] == []
    assert "Licence" in (root / "ORIGIN.md").read_text(encoding="utf-8")


def test_the_committed_outputs_are_what_f5lite_prepare_makes_of_the_metadata(tmp_path):
    root = demo_dir()
    remade = prepare(root / "metadata.csv", tmp_path, PrepareOptions(workers=1))
    assert remade.rows == read_manifest(root / "manifest.jsonl")
    assert (tmp_path / "vocab.txt").read_bytes() == (root / "vocab.txt").read_bytes()


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
    assert sorted(seen) == sorted(str(r.audio_path) for r in train.dataset.rows)
    assert set(seen.values()) == {1}

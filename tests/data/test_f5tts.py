"""Reading F5-TTS prepared datasets (raw.arrow or raw/, duration.json, vocab.txt) through the optional `datasets`."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from support.data_helpers import write_tone

from f5lite.config import DataConfig
from f5lite.data import build_train_data
from f5lite.data.cuts import frames_of, text_of
from f5lite.data.f5tts_arrow import F5TTSCuts
from f5lite.text import load_vocab


def _f5tts_dir(root, rows, *, folder=False):
    """Write rows {audio_path, text, duration} the way F5-TTS's prepare scripts do."""
    datasets = pytest.importorskip("datasets")
    from datasets.arrow_writer import ArrowWriter

    root.mkdir(parents=True, exist_ok=True)
    if folder:
        datasets.Dataset.from_list(rows).save_to_disk(str(root / "raw"))
    else:
        with ArrowWriter(path=str(root / "raw.arrow")) as writer:
            for row in rows:
                writer.write(row)
            writer.finalize()
    (root / "duration.json").write_text(json.dumps({"duration": [r["duration"] for r in rows]}), encoding="utf-8")
    tokens = sorted({t for r in rows for t in r["text"]} - {" "})
    (root / "vocab.txt").write_text(" \n" + "\n".join(tokens) + "\n", encoding="utf-8")
    return root


def test_an_f5tts_char_dataset_loads_and_batches(tmp_path, caplog):
    seconds = [1.0, 1.5, 0.7]
    audio = [write_tone(tmp_path / "wavs" / f"{i}.wav", s) for i, s in enumerate(seconds)]
    rows = [{"audio_path": str(audio[i]), "text": f"line {i}", "duration": s} for i, s in enumerate(seconds)]
    rows.append({"audio_path": str(audio[0]), "text": "far too long", "duration": 35.0})
    data = _f5tts_dir(tmp_path / "f5_char", rows)
    with caplog.at_level(logging.WARNING, logger="f5lite.data.f5tts_arrow"):
        cuts = list(F5TTSCuts(data))
    assert "1 of 4 rows are outside 0.3-30.0 s" in caplog.text
    assert [text_of(c) for c in cuts] == ["line 0", "line 1", "line 2"]
    assert [frames_of(c) for c in cuts] == [94, 141, 66]  # vocos frames of the durations at 24 kHz

    train = build_train_data(DataConfig(dir=str(data), num_workers=0, frames_per_gpu=1000), seed=0)
    assert train.sources[0].kind == "f5tts"
    assert train.dataset.load(cuts[1]).mel.shape == (141, 100)
    train.sampler.set_epoch(0)
    batches = list(train.loader)
    assert sorted(p for b in batches for p in b.paths) == sorted(map(str, audio))
    assert all(b.text_ids.min() >= -1 for b in batches)


def test_a_pretokenized_pinyin_dataset_in_a_save_to_disk_folder(tmp_path):
    audio = write_tone(tmp_path / "a.wav", 1.2)
    rows = [{"audio_path": str(audio), "text": ["ni3", "hao3", " ", "a"], "duration": 1.2}]
    data = _f5tts_dir(tmp_path / "f5_pinyin", rows, folder=True)
    (cut,) = list(F5TTSCuts(data))
    assert cut.custom["tokens"] == ["ni3", "hao3", " ", "a"]
    train = build_train_data(DataConfig(dir=str(data), num_workers=0, tokenizer="pinyin"), seed=0)
    train.sampler.set_epoch(0)
    (batch,) = list(train.loader)
    vocab = load_vocab(data / "vocab.txt")
    assert batch.text_ids[0].tolist() == [vocab.token_to_id[t] for t in ("ni3", "hao3", " ", "a")]


def test_a_duration_file_that_does_not_match_is_refused(tmp_path):
    audio = write_tone(tmp_path / "a.wav", 1.0)
    data = _f5tts_dir(tmp_path / "f5", [{"audio_path": str(audio), "text": "x", "duration": 1.0}])
    (data / "duration.json").write_text('{"duration": [1.0, 2.0]}', encoding="utf-8")
    with pytest.raises(ValueError, match="2 durations for 1 rows"):
        build_train_data(DataConfig(dir=str(data)), seed=0)
    (data / "duration.json").unlink()
    with pytest.raises(ValueError, match="duration.json"):
        build_train_data(DataConfig(dir=str(data)), seed=0)


def test_without_datasets_the_error_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "raw.arrow").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"f5lite\[f5tts\]"):
        build_train_data(DataConfig(dir=str(tmp_path)), seed=0)

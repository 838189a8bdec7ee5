"""Dataset, collate and loader: shapes and padding, files that break after preparation, the mel cache."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from data_helpers import write_tone

from f5lite.audio import load_audio, log_mel
from f5lite.config import DataConfig, compose_config
from f5lite.data import Collate, ManifestDataset, build_train_data
from f5lite.prepare import PrepareOptions, prepare
from f5lite.text import PAD_ID, TextEncoder, load_vocab

SECONDS = [0.6, 1.0, 1.4, 0.8, 1.9, 1.2, 0.5, 1.7, 1.1, 0.9]


def _prepared(root, mels=False):
    src = root / "src"
    for i, seconds in enumerate(SECONDS):
        write_tone(src / f"{i:02d}.wav", seconds, sample_rate=16000)
        (src / f"{i:02d}.txt").write_text(f"take {i}" + "!" * i, encoding="utf-8")
    prepare(src, root / "data", PrepareOptions(mels=mels))
    return root / "data"


def test_items_and_batches_have_the_documented_shapes(tmp_path):
    data = _prepared(tmp_path)
    dataset = ManifestDataset(data)
    assert len(dataset) == len(SECONDS) and dataset.frames == [r.frames for r in dataset.rows]
    item = dataset[2]
    torch.testing.assert_close(item.mel, log_mel(load_audio(dataset.rows[2].audio_path)[None])[0])
    assert item.num_skipped == 0

    encoder = TextEncoder("char", load_vocab(data / "vocab.txt"))
    items = [dataset[i] for i in (0, 4, 6)]
    batch = Collate(encoder)(items)
    lengths = [it.mel.shape[0] for it in items]
    assert batch.mel.shape == (3, max(lengths), 100)
    assert batch.mel_lengths.tolist() == lengths
    assert bool((batch.mel[2, lengths[2] :] == 0).all())
    assert batch.text_lengths.tolist() == [len(it.text) for it in items]
    assert batch.text_ids.shape == (3, max(batch.text_lengths.tolist()))
    assert batch.text_ids[0, batch.text_lengths[0] :].eq(PAD_ID).all()
    assert batch.paths == [it.path for it in items] and batch.num_skipped == 0

    padded = Collate(encoder, pad_multiple=32)(items)
    assert padded.mel.shape[1] % 32 == 0 and padded.text_ids.shape[1] % 32 == 0
    torch.testing.assert_close(padded.mel[:, : max(lengths)], batch.mel)
    assert padded.text_ids[:, batch.text_ids.shape[1] :].eq(PAD_ID).all()


def test_a_file_broken_after_preparation_is_replaced_logged_and_counted(tmp_path, caplog):
    data = _prepared(tmp_path)
    dataset = ManifestDataset(data, max_skip_ratio=0.5)
    broken = dataset.rows[3].audio_path
    broken.write_bytes(b"truncated")
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        item = dataset[3]
        again = dataset[3]
    assert item.path != str(broken) and item.num_skipped == 1 and again.num_skipped == 1
    replacement = next(r for r in dataset.rows if str(r.audio_path) == item.path)
    neighbours = sorted(dataset.frames)
    assert abs(neighbours.index(replacement.frames) - neighbours.index(dataset.rows[3].frames)) <= 1
    assert dataset.num_failed == 2 and dataset.num_reads == 4
    assert [str(broken) in r.getMessage() for r in caplog.records] == [True]  # logged once, counted every time
    assert Collate(TextEncoder("byte"))([item, dataset[0]]).num_skipped == 1


def test_a_file_of_another_length_than_the_manifest_says_is_a_failed_read(tmp_path, caplog):
    """A stale manifest must not feed an over-budget batch: the item is replaced, logged and counted."""
    data = _prepared(tmp_path)
    dataset = ManifestDataset(data, max_skip_ratio=0.5)
    row = dataset.rows[4]  # 1.9 s
    write_tone(row.audio_path, 3.0, sample_rate=16000)  # re-recorded longer after preparation
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        item = dataset[4]
    assert item.path != str(row.audio_path) and item.num_skipped == 1 and dataset.num_failed == 1
    assert f"gives {row.frames + 103} mel frames but the manifest says {row.frames}" in caplog.text
    write_tone(data.parent / "src" / "00.wav", SECONDS[0] + 170 / 16000, sample_rate=16000)  # at most a frame more
    assert ManifestDataset(data)[0].num_skipped == 0


def test_a_cached_mel_of_another_length_falls_back_to_the_audio(tmp_path, caplog):
    data = _prepared(tmp_path, mels=True)
    dataset = ManifestDataset(data)
    row = dataset.rows[4]
    np.save(row.mel_path, np.zeros((row.frames + 40, 100), dtype=np.float32))  # a stale cache file
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        item = dataset[4]
    assert item.path == str(row.audio_path) and item.num_skipped == 0 and item.mel.shape[0] == row.frames
    assert "decoding" in caplog.text and f"but the manifest says {row.frames}" in caplog.text


def test_too_many_broken_files_stop_training_with_a_clear_message(tmp_path):
    data = _prepared(tmp_path)
    dataset = ManifestDataset(data, max_skip_ratio=0.2)
    for row in dataset.rows[:3]:
        row.audio_path.unlink()
    dataset[5]
    dataset[0]  # early failures are judged against 10 reads (the warm-up, here the dataset size)
    assert dataset[1].num_skipped == 1 and dataset.num_failed == 2  # 2 of 10: not above 20% yet
    with pytest.raises(RuntimeError, match=r"3 of 6 item reads .*max_skip_ratio=0\.2"):
        dataset[2]

    strict = ManifestDataset(data, max_skip_ratio=0.0)
    with pytest.raises(RuntimeError, match="item reads in this process failed"):
        strict[2]


def test_retries_are_bounded_and_not_recursive(tmp_path):
    data = _prepared(tmp_path)
    dataset = ManifestDataset(data, max_skip_ratio=1.0, max_retries=3)
    for row in dataset.rows:
        row.audio_path.unlink()
    with pytest.raises(RuntimeError, match="4 items in a row could not be read"):
        dataset[0]
    assert dataset.num_failed == 4


def test_the_mel_cache_is_used_and_a_bad_cache_file_falls_back_to_the_audio(tmp_path, caplog):
    data = _prepared(tmp_path, mels=True)
    dataset = ManifestDataset(data)
    first, expected = (log_mel(load_audio(dataset.rows[i].audio_path)[None])[0] for i in (0, 1))
    dataset.rows[0].audio_path.unlink()  # the cache alone is enough
    torch.testing.assert_close(dataset[0].mel, first)
    assert dataset.num_failed == 0
    assert dataset.rows[1].mel_path is not None
    dataset.rows[1].mel_path.write_bytes(b"not numpy")
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        torch.testing.assert_close(dataset[1].mel, expected)
    assert "decoding" in caplog.text
    # Another mel convention than the cache's decodes the audio.
    assert ManifestDataset(data, mel_type="bigvgan")[2].mel.shape[0] == dataset.rows[2].frames - 1


def test_build_train_data_from_the_config_with_loader_workers(tmp_path):
    data = _prepared(tmp_path)
    cfg = DataConfig(dir=str(data), frames_per_gpu=400, max_samples=4, num_workers=2, pad_multiple=16)
    train = build_train_data(cfg, seed=0)
    assert train.encoder.num_embeds == len(load_vocab(data / "vocab.txt"))
    batches = list(train.loader)
    assert len(batches) == len(train.sampler)
    assert sorted(p for b in batches for p in b.paths) == sorted(str(r.audio_path) for r in train.dataset.rows)
    assert all(b.mel.shape[1] % 16 == 0 and b.mel.shape[0] * b.mel.shape[1] <= 400 for b in batches)


def test_build_train_data_refuses_a_bad_data_dir(tmp_path):
    with pytest.raises(ValueError, match="data.dir is not set"):
        build_train_data(DataConfig(), seed=0)
    with pytest.raises(ValueError, match="does not exist"):
        build_train_data(DataConfig(dir=str(tmp_path / "nowhere")), seed=0)
    with pytest.raises(ValueError, match="no manifest.jsonl"):
        build_train_data(DataConfig(dir=str(tmp_path)), seed=0)
    data = _prepared(tmp_path)
    (data / "vocab.txt").unlink()
    with pytest.raises(ValueError, match="no vocab.txt"):
        build_train_data(DataConfig(dir=str(data)), seed=0)
    assert (
        build_train_data(DataConfig(dir=str(data), tokenizer="byte", num_workers=0), seed=0).encoder.num_embeds == 256
    )


@pytest.mark.parametrize(
    ("override", "key"), [("data.pad_multiple=0", "pad_multiple"), ("data.max_skip_ratio=1.5", "max_skip_ratio")]
)
def test_new_data_keys_are_validated(override, key):
    with pytest.raises(ValueError, match=rf"data\.{key}"):
        compose_config([override])


def test_pinning_is_asked_for_only_where_cuda_can_use_it(tmp_path):
    data = _prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    assert train.loader.pin_memory == torch.cuda.is_available()  # pinning needs CUDA; the batches still load
    assert next(iter(train.loader)).mel.shape[0] >= 1
    assert not build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0).loader.pin_memory


@pytest.mark.gpu
def test_pinned_batches_for_asynchronous_copies(tmp_path):
    data = _prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    batch = next(iter(train.loader))
    assert batch.mel.is_pinned() and batch.mel_lengths.is_pinned() and batch.text_ids.is_pinned()


@pytest.mark.gpu
def test_a_batch_moves_to_the_gpu(tmp_path):
    data = _prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    batch = next(iter(train.loader)).to("cuda", non_blocking=True)
    assert batch.mel.is_cuda and batch.text_ids.is_cuda and batch.mel_lengths.is_cuda and batch.text_lengths.is_cuda

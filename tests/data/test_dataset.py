"""Loading batches of cuts: shapes and padding, files that break after preparation, the mel cache, Shar shards,
Lhotse recipe CutSets, and the loader made from the `data` config section."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from lhotse import CutSet, MonoCut, Recording, SupervisionSegment
from support.data_helpers import write_tone

from f5lite.audio import load_audio, log_mel
from f5lite.config import DataConfig, compose_config
from f5lite.data import CutDataset, build_train_data, make_cut, open_source, write_cuts
from f5lite.data.cuts import MEL_FIELD, MEL_TYPE
from f5lite.data.mel_cache import mel_cache_path, write_mel
from f5lite.text import PAD_ID, TextEncoder, load_vocab

SECONDS = [0.6, 1.0, 1.4, 0.8, 1.9, 1.2, 0.5, 1.7, 1.1, 0.9]
VOCAB = " !aekt0123456789"


def prepared(root: Path, mels: bool = False) -> Path:
    """A prepared directory as f5lite-prepare writes it: 16 kHz tones, cuts.jsonl.gz with token ids, vocab.txt."""
    data = root / "data"
    data.mkdir(parents=True)
    (data / "vocab.txt").write_text("".join(f"{c}\n" for c in VOCAB), encoding="utf-8")
    encoder = TextEncoder("char", load_vocab(data / "vocab.txt"))
    cuts = []
    for i, seconds in enumerate(SECONDS):
        audio = write_tone(data / "audio" / f"{i:02d}.wav", seconds, sample_rate=16000)
        text = f"take {i}" + "!" * i
        samples = sf.info(audio).frames
        frames = log_mel(load_audio(audio)[None])[0].shape[0]
        mel = None
        if mels:
            path = mel_cache_path(data / "mels", audio, "vocos")
            write_mel(path, log_mel(load_audio(audio)[None])[0])
            mel = str(path.relative_to(data))
        cuts.append(make_cut(f"audio/{i:02d}", f"audio/{i:02d}.wav", sample_rate=16000, num_samples=samples,
                             channels=1, text=text, token_ids=encoder.ids(text), frames=frames, mel_path=mel,
                             mel_type="vocos" if mels else None))  # fmt: skip
    write_cuts(data / "cuts.jsonl.gz", cuts)
    return data


def dataset_and_cuts(data: Path, **kwargs) -> tuple[CutDataset, list]:
    encoder = TextEncoder("char", load_vocab(data / "vocab.txt"))
    return CutDataset(encoder, **kwargs), list(open_source(data).cuts())


def test_batches_have_the_documented_shapes(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    dataset, cuts = dataset_and_cuts(data)
    picked = CutSet.from_cuts([cuts[0], cuts[4], cuts[6]])
    batch = dataset[picked]
    audio = [load_audio(data / "audio" / f"{i:02d}.wav") for i in (0, 4, 6)]
    lengths = [log_mel(a[None]).shape[1] for a in audio]
    assert batch.mel.shape == (3, max(lengths), 100) and batch.mel_lengths.tolist() == lengths
    torch.testing.assert_close(batch.mel[1, : lengths[1]], log_mel(audio[1][None])[0])
    assert bool((batch.mel[2, lengths[2] :] == 0).all())
    texts = [f"take {i}" + "!" * i for i in (0, 4, 6)]
    expected = TextEncoder("char", load_vocab(data / "vocab.txt")).encode(texts)
    assert torch.equal(batch.text_ids, expected.ids) and torch.equal(batch.text_lengths, expected.lengths)
    assert batch.paths == [str(data / "audio" / f"{i:02d}.wav") for i in (0, 4, 6)] and batch.num_skipped == 0
    padded = CutDataset(dataset.encoder, pad_multiple=32)[picked]
    assert padded.mel.shape[1] % 32 == 0 and padded.text_ids.shape[1] % 32 == 0
    assert padded.text_ids[:, batch.text_ids.shape[1] :].eq(PAD_ID).all()


def test_a_file_broken_after_preparation_is_replaced_logged_and_counted(tmp_path: Path, caplog) -> None:
    data = prepared(tmp_path)
    dataset, cuts = dataset_and_cuts(data, max_skip_ratio=0.5)
    broken = data / "audio" / "03.wav"
    broken.write_bytes(b"truncated")
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        batch = dataset[CutSet.from_cuts(cuts[2:5])]
        again = dataset[CutSet.from_cuts(cuts[3:5])]
    assert str(broken) not in batch.paths and batch.num_skipped == 1 and again.num_skipped == 1
    # The replacement is the nearest-length utterance of the batch: 1.4 s (02) is nearer to 0.8 s than 1.9 s (04).
    assert batch.paths == [str(data / "audio" / f"{i}.wav") for i in ("02", "02", "04")]
    assert dataset.num_failed == 2 and dataset.num_reads == 5
    assert sum(str(broken) in r.getMessage() for r in caplog.records) == 1  # logged once, counted every time


def test_a_file_of_another_length_than_measured_is_a_failed_read(tmp_path: Path, caplog) -> None:
    """A stale manifest must not feed an over-budget batch: the utterance is replaced, logged and counted."""
    data = prepared(tmp_path)
    dataset, cuts = dataset_and_cuts(data, max_skip_ratio=0.5)
    write_tone(data / "audio" / "04.wav", 3.0, sample_rate=16000)  # re-recorded longer after preparation
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        batch = dataset[CutSet.from_cuts(cuts[4:6])]
    assert batch.num_skipped == 1 and dataset.num_failed == 1
    assert f"but the manifest says {cuts[4].custom['frames']}" in caplog.text
    write_tone(data / "audio" / "00.wav", SECONDS[0] + 170 / 16000, sample_rate=16000)  # at most a frame more
    assert dataset[CutSet.from_cuts(cuts[:1])].num_skipped == 0


def test_too_many_broken_files_stop_training_with_a_clear_message(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    dataset, cuts = dataset_and_cuts(data, max_skip_ratio=0.02)  # 2 failures allowed in the first 100 reads
    for i in range(3):
        (data / "audio" / f"{i:02d}.wav").unlink()
    assert dataset[CutSet.from_cuts(cuts[:2] + cuts[5:7])].num_skipped == 2
    with pytest.raises(RuntimeError, match=r"3 of 5 utterance reads .*max_skip_ratio=0\.02"):
        dataset[CutSet.from_cuts(cuts[2:3])]
    strict, _ = dataset_and_cuts(data, max_skip_ratio=0.0)
    with pytest.raises(RuntimeError, match="utterance reads in this process failed"):
        strict[CutSet.from_cuts(cuts[:1])]


def test_a_batch_whose_every_utterance_fails_takes_earlier_ones_or_stops(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    dataset, cuts = dataset_and_cuts(data, max_skip_ratio=1.0)
    (data / "audio" / "00.wav").unlink()
    with pytest.raises(RuntimeError, match="every utterance of a batch failed to load"):
        dataset[CutSet.from_cuts(cuts[:1])]  # nothing loaded yet to stand in for it
    dataset[CutSet.from_cuts(cuts[6:7])]  # 0.5 s: now a recent utterance exists
    batch = dataset[CutSet.from_cuts(cuts[:1])]
    assert batch.num_skipped == 1 and batch.paths == [str(data / "audio" / "06.wav")]


def test_the_mel_cache_is_used_and_a_bad_cache_file_falls_back_to_the_audio(tmp_path: Path, caplog) -> None:
    data = prepared(tmp_path, mels=True)
    dataset, cuts = dataset_and_cuts(data)
    first, second = (log_mel(load_audio(data / "audio" / f"0{i}.wav")[None])[0] for i in (0, 1))
    (data / "audio" / "00.wav").unlink()  # the cache alone is enough
    torch.testing.assert_close(dataset.load(cuts[0]).mel, first)
    Path(cuts[1].custom["mel_path"]).write_bytes(b"not numpy")
    with caplog.at_level(logging.WARNING, logger="f5lite.data.dataset"):
        torch.testing.assert_close(dataset.load(cuts[1]).mel, second)
    assert "decoding the audio" in caplog.text
    stale = cuts[2].custom["mel_path"]
    np.save(stale, np.zeros((cuts[2].custom["frames"] + 40, 100), dtype=np.float32))  # a stale cache file
    assert dataset.load(cuts[2]).mel.shape[0] == cuts[2].custom["frames"]  # the audio, not the cache
    # Another mel convention than the cache's decodes the audio.
    bigvgan = CutDataset(dataset.encoder, mel_type="bigvgan").load(cuts[3]).mel
    assert bigvgan.shape[0] == cuts[3].custom["frames"] - 1


def test_shar_shards_are_read_by_member(tmp_path: Path) -> None:
    """Audio (FLAC) and mels from Shar tar files, read by seeking to the member, as the loader workers do."""
    tones = [load_audio(write_tone(tmp_path / f"{i}.wav", s)) for i, s in enumerate((0.7, 1.3, 0.9))]
    cuts = []
    for i, wave in enumerate(tones):
        buffer = io.BytesIO()
        sf.write(buffer, wave.numpy(), 24000, format="FLAC")
        recording = Recording.from_bytes(buffer.getvalue(), recording_id=f"u{i}")
        mel = log_mel(wave[None])[0].numpy()
        cut = MonoCut(f"u{i}", 0.0, recording.duration, 0, recording=recording,
                      supervisions=[SupervisionSegment(f"u{i}", f"u{i}", 0.0, recording.duration, text="take")],
                      custom={"frames": mel.shape[0]})  # fmt: skip
        if i < 2:
            cut = cut.attach_tensor(MEL_FIELD, mel)  # a plain array: stored and read back whole, as prepare does
            cut.custom[MEL_TYPE] = "vocos"
        cuts.append(cut)
    shar = tmp_path / "shar"
    shar.mkdir()
    CutSet.from_cuts(cuts).to_shar(shar, fields={"recording": "flac", MEL_FIELD: "numpy"}, shard_size=2)
    (shar / "vocab.txt").write_text(" \na\ne\nk\nt\n", encoding="utf-8")
    source = open_source(shar)
    assert source.kind == "shar" and len(source.files) == 2
    dataset = CutDataset(TextEncoder("char", load_vocab(shar / "vocab.txt")))
    loaded = [dataset.load(cut) for cut in source.cuts()]
    for utterance, wave in zip(loaded, tones, strict=True):
        torch.testing.assert_close(utterance.mel, log_mel(wave[None])[0], atol=2e-3, rtol=0)  # FLAC is 16-bit
    assert (tmp_path / "shar" / "mel.000001.tar").is_file()  # the third cut has no mel: decoded from its FLAC


def test_a_lhotse_recipe_cutset_is_read_as_it_is(tmp_path: Path) -> None:
    """Cuts without f5lite's fields (a Lhotse recipe's), segments of a longer recording included."""
    long = write_tone(tmp_path / "long.wav", 3.0, sample_rate=16000)
    recording = Recording.from_file(long)
    whole = MonoCut(
        "whole",
        0.0,
        3.0,
        0,
        recording=recording,
        supervisions=[SupervisionSegment("whole", recording.id, 0.0, 3.0, text="take all")],
    )
    part = MonoCut("part", 1.0, 1.2, 0, recording=recording,
                   supervisions=[SupervisionSegment("part", recording.id, 1.0, 1.2, text="take 1")])  # fmt: skip
    CutSet.from_cuts([whole, part]).to_file(tmp_path / "recipe_cuts.jsonl.gz")
    (tmp_path / "vocab.txt").write_text("".join(f"{c}\n" for c in VOCAB), encoding="utf-8")
    cfg = DataConfig(dir=str(tmp_path / "recipe_cuts.jsonl.gz"), num_workers=0, frames_per_gpu=1000)
    train = build_train_data(cfg, seed=0)
    train.sampler.set_epoch(0)
    batches = list(train.loader)
    assert sorted(n for b in batches for n in b.mel_lengths.tolist()) == [1 + 28800 // 256, 1 + 72000 // 256]
    assert sorted(n for b in batches for n in b.text_lengths.tolist()) == [len("take 1"), len("take all")]


def test_a_directory_prepared_by_an_earlier_version_trains(tmp_path: Path) -> None:
    """A `manifest.jsonl` (relative and absolute paths) gives the same batches of mels and text as its rows say."""
    data = tmp_path / "old"
    (data / "vocab.txt").parent.mkdir()
    (data / "vocab.txt").write_text("".join(f"{c}\n" for c in VOCAB), encoding="utf-8")
    rows = []
    for i, seconds in enumerate(SECONDS):
        audio = write_tone(data / "wavs" / f"{i:02d}.wav", seconds, sample_rate=16000)
        frames = log_mel(load_audio(audio)[None])[0].shape[0]
        path = str(audio) if i % 2 else f"wavs/{i:02d}.wav"
        rows.append({"audio_path": path, "text": f"take {i}", "duration": seconds, "frames": frames})
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train = build_train_data(DataConfig(dir=str(data), num_workers=0, frames_per_gpu=2000), seed=0)
    train.sampler.set_epoch(0)
    batches = list(train.loader)
    assert sum(b.num_skipped for b in batches) == 0
    assert sorted(n for b in batches for n in b.mel_lengths.tolist()) == sorted(r["frames"] for r in rows)
    assert sorted(n for b in batches for n in b.text_lengths.tolist()) == sorted(len(r["text"]) for r in rows)


def test_build_train_data_with_loader_workers(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    cfg = DataConfig(dir=str(data), frames_per_gpu=400, max_samples=4, num_workers=2, pad_multiple=16)
    train = build_train_data(cfg, seed=0)
    assert train.encoder.num_embeds == len(VOCAB)
    train.sampler.set_epoch(0)
    batches = list(train.loader)
    assert sorted(p for b in batches for p in b.paths) == sorted(str(p) for p in (data / "audio").glob("*.wav"))
    assert all(b.mel.shape[1] % 16 == 0 and int(b.mel_lengths.sum()) <= 400 for b in batches)
    train.close_workers()


def test_build_train_data_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="data.dir is not set"):
        build_train_data(DataConfig(), seed=0)
    with pytest.raises(ValueError, match="does not exist"):
        build_train_data(DataConfig(dir=str(tmp_path / "nowhere")), seed=0)
    with pytest.raises(ValueError, match="holds no cuts.jsonl.gz .*no manifest.jsonl and no F5-TTS raw.arrow"):
        build_train_data(DataConfig(dir=str(tmp_path)), seed=0)
    data = prepared(tmp_path)
    other = tmp_path / "other_vocab.txt"
    other.write_text("".join(f"{c}\n" for c in " " + VOCAB[:0:-1]), encoding="utf-8")  # the same tokens, reordered
    with pytest.raises(ValueError, match="was prepared with a vocab that .*other_vocab.txt does not extend"):
        build_train_data(DataConfig(dir=str(data), vocab=str(other)), seed=0)
    (data / "vocab.txt").unlink()
    with pytest.raises(ValueError, match="has no vocab.txt, which data.tokenizer=char needs: give data.vocab"):
        build_train_data(DataConfig(dir=str(data)), seed=0)
    assert build_train_data(DataConfig(dir=str(data), tokenizer="byte"), seed=0).encoder.num_embeds == 256


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("data.pad_multiple=0", "pad_multiple"),
        ("data.max_skip_ratio=1.5", "max_skip_ratio"),
        ("data.window=0", "window"),
        ("data.fill_efficiency=0", "fill_efficiency"),
        ("data.fill_efficiency=1.5", "fill_efficiency"),
        ("data.quadratic_duration=-1", "quadratic_duration"),
        ("+data.sources=[{dir: a, weight: 0}]", r"sources\[\]\.weight"),
    ],
)
def test_data_keys_are_validated(override: str, key: str) -> None:
    with pytest.raises(ValueError, match=rf"data\.{key}"):
        compose_config([override])
    with pytest.raises(ValueError, match="data.dir and data.sources are both set"):
        compose_config(["data.dir=x", "data.sources=[{dir: y}]"])


def test_pinning_is_asked_for_only_where_cuda_can_use_it(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    assert train.loader.pin_memory == torch.cuda.is_available()  # pinning needs CUDA; the batches still load
    train.sampler.set_epoch(0)
    assert next(iter(train.loader)).mel.shape[0] >= 1
    assert not build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0).loader.pin_memory


@pytest.mark.gpu
def test_pinned_batches_for_asynchronous_copies(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    batch = next(iter(train.loader))
    assert batch.mel.is_pinned() and batch.mel_lengths.is_pinned() and batch.text_ids.is_pinned()


@pytest.mark.gpu
def test_a_batch_moves_to_the_gpu(tmp_path: Path) -> None:
    data = prepared(tmp_path)
    train = build_train_data(DataConfig(dir=str(data), num_workers=0), seed=0, pin_memory=True)
    batch = next(iter(train.loader)).to("cuda", non_blocking=True)
    assert batch.mel.is_cuda and batch.text_ids.is_cuda and batch.mel_lengths.is_cuda and batch.text_lengths.is_cuda

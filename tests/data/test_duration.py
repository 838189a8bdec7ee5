"""What the duration predictor trains on: text ids, measured lengths and speakers from the data, without reading audio."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lhotse import CutSet, MonoCut
from lhotse.cut import Cut
from support.data_helpers import audio_path, read_cuts

import f5lite.data.dataset as dataset_module
from f5lite.config import compose_config
from f5lite.config.data import DataConfig
from f5lite.data import build_train_data
from f5lite.data.dataset import CutDataset
from f5lite.paths import demo_dir
from f5lite.text import TextEncoder, load_vocab


def duration_data_config() -> DataConfig:
    """The data section of the `duration_small` recipe (the shipped demo data), in this process."""
    cfg = compose_config(["+recipe=duration_small", "data.num_workers=0"])
    assert Path(cfg.data.dir) == demo_dir()
    return cfg.data


def demo_cuts_by_audio() -> dict[Path, Cut]:
    """The demo training cuts, by their audio file."""
    return {audio_path(cut, demo_dir()).resolve(): cut for cut in read_cuts(demo_dir())}


def refuse_audio(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every way the dataset reads or converts audio (or cached mels) fail the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dataset read audio although audio=False")

    for name in ("load_audio", "decode_audio", "log_mel", "read_mel"):
        monkeypatch.setattr(dataset_module, name, refuse)
    monkeypatch.setattr(MonoCut, "load_audio", refuse)  # a segment of a longer recording


def test_without_audio_batches_carry_lengths_ids_and_speakers(monkeypatch: pytest.MonkeyPatch) -> None:
    """audio=False: `[b, n, 0]` mels of the measured lengths, the stored ids, the demo's speakers; no audio read."""
    refuse_audio(monkeypatch)
    cfg = duration_data_config()
    train = build_train_data(cfg, seed=0, audio=False)
    assert train.dataset.audio is False
    cuts = demo_cuts_by_audio()
    speakers = {cut.supervisions[0].speaker for cut in cuts.values()}
    assert len(speakers) >= 4 and None not in speakers
    train.sampler.set_epoch(0)
    seen: list[Path] = []
    for batch in train.loader:
        b = len(batch.paths)
        assert batch.mel.shape == (b, int(batch.mel_lengths.max()), 0)
        assert len(batch.speakers) == b and batch.num_skipped == 0
        assert batch.mel.shape[0] * batch.mel.shape[1] <= cfg.frames_per_gpu
        for row, path in enumerate(batch.paths):
            cut = cuts[Path(path).resolve()]
            assert batch.mel_lengths[row].item() == cut.custom["frames"]
            assert batch.speakers[row] == cut.supervisions[0].speaker
            ids = batch.text_ids[row, : batch.text_lengths[row]].tolist()
            assert ids == cut.custom["token_ids"]
            seen.append(Path(path).resolve())
    assert sorted(seen) == sorted(cuts)  # every cut once in the epoch
    assert train.dataset.num_failed == 0


def test_with_audio_batches_carry_speakers_too() -> None:
    """The default (audio=True) still gives full mels, and the same speakers."""
    cfg = dataclasses.replace(duration_data_config(), max_samples=6)  # one small batch is enough
    train = build_train_data(cfg, seed=0)
    assert train.dataset.audio is True
    train.sampler.set_epoch(0)
    batch = next(iter(train.loader))
    cuts = demo_cuts_by_audio()
    assert batch.mel.shape[0] == len(batch.paths) == len(batch.speakers) and batch.mel.shape[2] == 100
    assert batch.speakers == [cuts[Path(p).resolve()].supervisions[0].speaker for p in batch.paths]
    assert all(speaker is not None for speaker in batch.speakers)


def test_a_cut_without_a_speaker_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """No speaker (or an empty one) in the supervision: None in the batch, the others kept."""
    refuse_audio(monkeypatch)
    cuts = read_cuts(demo_dir())[:3]
    unnamed = dataclasses.replace(cuts[0], supervisions=[dataclasses.replace(cuts[0].supervisions[0], speaker=None)])
    blank = dataclasses.replace(cuts[1], supervisions=[dataclasses.replace(cuts[1].supervisions[0], speaker="")])
    encoder = TextEncoder("char", load_vocab(demo_dir() / "vocab.txt"))
    batch = CutDataset(encoder, audio=False)[CutSet.from_cuts([unnamed, blank, cuts[2]])]
    assert batch.speakers == [None, None, cuts[2].supervisions[0].speaker]
    assert batch.mel_lengths.tolist() == [cut.custom["frames"] for cut in cuts]
    assert batch.mel.shape == (3, max(cut.custom["frames"] for cut in cuts), 0)

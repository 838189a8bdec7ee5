"""f5lite-prepare --shar: the kept cuts as Lhotse Shar shards, with 24 kHz mono FLAC audio and the cached mels."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from lhotse import CutSet
from support.data_helpers import file_digests, read_cuts, write_tone

from f5lite.audio import SAMPLE_RATE, load_audio, log_mel
from f5lite.data.mel_cache import read_mel
from f5lite.prepare.cli import main
from f5lite.prepare.shar_writer import is_shar_export, shar_fields

SECONDS = (0.5, 0.6, 0.7, 0.45, 0.55, 0.65, 0.75)


def _corpus(root: Path) -> Path:
    """Seven utterances at three sample rates, one in stereo, in two speakers' folders."""
    for i, seconds in enumerate(SECONDS):
        rate = (24000, 22050, 48000)[i % 3]
        audio = root / f"spk{i % 2}" / f"{i}.wav"
        write_tone(audio, seconds, sample_rate=rate, channels=2 if i == 2 else 1)
        audio.with_suffix(".txt").write_text(f"utterance {i}", encoding="utf-8")
    return root


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _contents(directory: Path) -> dict[str, str]:
    return {name: digest for name, (digest, _) in file_digests(directory).items()}


def test_shar_round_trip_with_audio_mels_and_shards(tmp_path, capsys):
    src, out, shar = _corpus(tmp_path / "src"), tmp_path / "out", tmp_path / "shar"
    args = [str(src), str(out), "--mels", "--workers", "1", "--shar", str(shar)]
    assert main([*args, "--shard-size", "3"]) == 0
    assert "shar: 3 shard(s)" in capsys.readouterr().out
    assert _names(shar) == sorted(
        [f"{field}.{k:06d}.{ext}" for k in range(3) for field, ext in [("cuts", "jsonl.gz"), ("recording", "tar")]]
        + [f"mel.{k:06d}.tar" for k in range(3)]
        + ["vocab.txt"]
    )
    assert (shar / "vocab.txt").read_bytes() == (out / "vocab.txt").read_bytes()
    prepared = {c.id: c for c in read_cuts(out)}

    fields = shar_fields(shar)
    assert [len(paths) for paths in fields.values()] == [3, 3, 3]
    cuts = list(CutSet.from_shar(fields=fields))
    assert [c.id for c in cuts] == list(prepared)  # the same cuts, in the same order
    for cut in cuts:
        source = prepared[cut.id]
        assert cut.supervisions[0].text == source.supervisions[0].text
        assert cut.supervisions[0].speaker == source.supervisions[0].speaker
        assert cut.custom["token_ids"] == source.custom["token_ids"]
        assert cut.custom["frames"] == source.custom["frames"] and cut.custom["mel_type"] == "vocos"
        assert "mel_path" not in cut.custom

        audio = cut.load_audio()
        expected = load_audio(out / source.recording.sources[0].source)
        assert cut.sampling_rate == SAMPLE_RATE and audio.shape == (1, expected.numel())
        assert np.abs(audio[0] - expected.numpy()).max() < 1e-4  # 16-bit FLAC of the training waveform

        mel = cut.load_custom("mel")
        assert mel.shape == (source.custom["frames"], 100) and mel.dtype == np.float32
        assert np.array_equal(mel, read_mel(out / source.custom["mel_path"]).numpy())
        np.testing.assert_allclose(mel, log_mel(expected[None])[0].numpy(), atol=1e-4)

    # Run again: the same bytes; with another shard size the earlier export is replaced whole.
    before = _contents(shar)
    assert main([*args, "--shard-size", "3"]) == 0
    assert _contents(shar) == before
    assert main(args) == 0
    assert _names(shar) == ["cuts.000000.jsonl.gz", "mel.000000.tar", "recording.000000.tar", "vocab.txt"]
    assert len(list(CutSet.from_shar(fields=shar_fields(shar)))) == len(SECONDS)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging directory left behind


def test_shar_without_mels_or_vocab(tmp_path):
    src, out, shar = _corpus(tmp_path / "src"), tmp_path / "out", tmp_path / "shar"
    assert main([str(src), str(out), "--tokenizer", "byte", "--workers", "1", "--shar", str(shar)]) == 0
    assert _names(shar) == ["cuts.000000.jsonl.gz", "recording.000000.tar"]
    assert is_shar_export(shar)
    # Without vocab.txt beside the shards, Lhotse reads the directory as it is.
    cuts = list(CutSet.from_shar(in_dir=shar))
    assert len(cuts) == len(SECONDS) and "mel" not in cuts[0].custom and "mel_type" not in cuts[0].custom
    assert cuts[0].custom["token_ids"] == list(b"utterance 0")


@pytest.mark.parametrize("content", ["someone's notes", "shar-like"])
def test_shar_into_a_foreign_directory_is_refused_with_one_line(tmp_path, capsys, content):
    src, out, shar = _corpus(tmp_path / "src"), tmp_path / "out", tmp_path / "shar"
    shar.mkdir()
    if content == "shar-like":  # the names of a Shar export, but cuts without f5lite's token ids
        cut = {"id": "a", "start": 0, "duration": 1.0, "channel": 0, "supervisions": [], "type": "MonoCut"}
        (shar / "cuts.000000.jsonl.gz").write_bytes(gzip.compress(json.dumps(cut).encode() + b"\n"))
    else:
        (shar / "notes.txt").write_text(content, encoding="utf-8")
    before = file_digests(shar)
    assert main([str(src), str(out), "--workers", "1", "--shar", str(shar)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a non-empty directory that is not a Shar export of f5lite-prepare" in err
    assert file_digests(shar) == before and not out.exists()  # refused before any work


def test_nothing_kept_empties_an_earlier_shar_export(tmp_path):
    src, out, shar = tmp_path / "src", tmp_path / "out", tmp_path / "shar"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("long enough", encoding="utf-8")
    assert main([str(src), str(out), "--workers", "1", "--shar", str(shar)]) == 0
    assert is_shar_export(shar)
    write_tone(src / "a.wav", 0.1)  # now too short
    assert main([str(src), str(out), "--workers", "1", "--shar", str(shar)]) == 1
    assert shar.is_dir() and _names(shar) == []

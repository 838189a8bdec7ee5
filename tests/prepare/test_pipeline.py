"""f5lite-prepare: keeps exactly the good files, says why it skipped each bad one, never touches the sources."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from support.data_helpers import audio_path, build_messy_dataset, file_digests, read_cuts, write_tone

from f5lite.audio import frames_for_samples, load_audio, log_mel
from f5lite.data.mel_cache import read_mel
from f5lite.prepare import Limits, PrepareOptions, prepare
from f5lite.prepare.checks import CheckedAudio, check_audio
from f5lite.prepare.cli import main
from f5lite.text import TextEncoder, load_vocab

PREPARE_SCRIPT = Path(sys.executable).with_name("f5lite-prepare")


def _skips(report: dict) -> list[tuple[str, str]]:
    return sorted((Path(s["path"]).name, s["reason"]) for s in report["skipped"])


def _outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def test_keeps_exactly_the_good_files_and_reports_each_bad_one(tmp_path, capsys):
    metadata, good, expected, vocab = build_messy_dataset(tmp_path / "src")
    out = tmp_path / "out"
    status = main([str(metadata), str(out), "--vocab", str(vocab), "--fixed-vocab", "--workers", "1"])
    assert status == 0

    cuts = {audio_path(c, out).name: c for c in read_cuts(out)}
    assert set(cuts) == good
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["kept"] == len(good)
    assert _skips(report) == sorted([*expected.items(), ("mono_24k.wav", "duplicate")])
    assert report["skipped_count"] == len(expected) + 1
    assert all(s["detail"] for s in report["skipped"])
    assert report["vocab"]["missing"]["ż"] == 1  # counted and listed
    assert report["outputs"] == ["cuts.jsonl.gz", "report.json", "vocab.txt"]

    stereo = cuts["stereo_48k.flac"]
    assert stereo.recording.sampling_rate == 48000 and stereo.recording.num_channels == 2
    assert stereo.recording.num_samples == 57600 and stereo.duration == pytest.approx(1.2)
    source = audio_path(stereo, out)
    assert stereo.custom["frames"] == frames_for_samples(28800) == log_mel(load_audio(source)[None]).shape[1]
    narrow = cuts["narrow_8k.wav"]
    assert narrow.recording.sampling_rate == 8000 and narrow.supervisions[0].text == "A telephone rate file."
    assert narrow.load_audio().shape == (1, 12000)  # Lhotse reads the file with the recorded counts

    printed = capsys.readouterr().out
    assert f"kept {len(good)} of {len(good) + len(expected) + 1}" in printed and "unknown_chars 1" in printed


def test_checked_audio_is_what_training_reads_with_the_exact_source_counts(tmp_path):
    _, good, _, _ = build_messy_dataset(tmp_path / "src")
    for name in sorted(good):
        path = tmp_path / "src" / "audio" / name
        checked = check_audio(path, Limits())
        assert isinstance(checked, CheckedAudio)
        assert torch.equal(checked.waveform, load_audio(path))
        data, rate = sf.read(path, always_2d=True)
        assert (checked.num_samples, checked.channels, checked.sample_rate) == (*data.shape, rate)


def test_console_script_with_parallel_workers_matches_a_serial_run(tmp_path):
    metadata, good, _, _ = build_messy_dataset(tmp_path / "src")
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    assert main([str(metadata), str(serial), "--workers", "1"]) == 0
    run = subprocess.run(
        [str(PREPARE_SCRIPT), str(metadata), str(parallel), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert _outputs(parallel) == _outputs(serial)
    # Without --fixed-vocab the vocab is built from the data, so the row with unusual characters is kept.
    assert {audio_path(c, parallel).name for c in read_cuts(parallel)} == good | {"unknown_chars.wav"}


def test_rerun_is_idempotent_and_leaves_the_sources_alone(tmp_path):
    metadata, _, _, _ = build_messy_dataset(tmp_path / "src")
    before = file_digests(tmp_path / "src")
    out = tmp_path / "out"
    first = prepare(metadata, out)
    written = _outputs(out)
    second = prepare(metadata, out)
    assert _outputs(out) == written
    assert first.report == second.report
    assert file_digests(tmp_path / "src") == before
    assert not list(out.glob(".*.tmp"))  # no temporary file left behind


def test_nothing_usable_exits_1_and_removes_stale_cuts(tmp_path, capsys):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("long enough", encoding="utf-8")
    out = tmp_path / "out"
    assert main([str(src), str(out), "--workers", "1"]) == 0  # an earlier run left cuts
    assert (out / "cuts.jsonl.gz").exists()
    write_tone(src / "a.wav", 0.1)  # now too short: nothing is usable
    assert main([str(src), str(out), "--workers", "1"]) == 1
    assert not (out / "cuts.jsonl.gz").exists()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["kept"] == 0 and _skips(report) == [("a.wav", "too_short")]
    assert "nothing usable" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nowhere", "{tmp}/out"], "does not exist"),
        (["{src}", "{tmp}/out", "--fixed-vocab"], "--vocab"),
        (["{src}", "{tmp}/out", "--min-seconds", "5", "--max-seconds", "1"], "min_seconds"),
        (["{src}", "{tmp}/out", "--vocab", "{tmp}/no_vocab.txt"], "vocab"),
        (["{src}", "{tmp}/out", "--tokenizer", "byte", "--vocab", "{tmp}/no_vocab.txt"], "byte"),
        (["{src}", "{tmp}/out", "--workers", "0"], "workers"),
        (["{tmp}/not_a_csv.csv", "{tmp}/out"], "neither an F5-TTS metadata.csv"),
        (["{src}", "{tmp}/out", "--shard-size", "3"], "--shar"),
        (["{src}", "{tmp}/out", "--shar", "{tmp}/shar", "--shard-size", "0"], "shard_size"),
        (["{src}", "{tmp}/out", "--shar", "{tmp}/out"], "holds the OUT_DIR"),
        (["{src}", "{tmp}/out", "--shar", "{tmp}"], "holds the OUT_DIR"),
    ],
)
def test_a_bad_command_line_exits_2_with_one_line(tmp_path, capsys, args, message):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "not_a_csv.csv").write_text("a,b,c\n", encoding="utf-8")
    argv = [a.format(tmp=tmp_path, src=src) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_vocab_extension_keeps_every_old_id(tmp_path):
    src = tmp_path / "src"
    for name, text in {"a.wav": "cab", "b.wav": "Zebra ł"}.items():
        write_tone(src / name, 1.0)
        (src / name).with_suffix(".txt").write_text(text, encoding="utf-8")
    base_tokens = [" ", "c", "a", "ni3", "b", "a", "e"]  # unsorted, a pinyin token, a duplicate row
    base = tmp_path / "pretrained_vocab.txt"
    base.write_text("\n".join(base_tokens) + "\n", encoding="utf-8")

    out = tmp_path / "out"
    result = prepare(src, out, PrepareOptions(vocab=base))
    extended = load_vocab(out / "vocab.txt")
    assert extended.tokens[: len(base_tokens)] == tuple(base_tokens)
    old = load_vocab(base)
    assert all(extended[token] == old[token] for token in old.tokens)
    assert extended.tokens[len(base_tokens) :] == ("Z", "r", "ł")  # appended in code point order
    assert result.report["vocab"]["added"] == ["Z", "r", "ł"]
    cuts = read_cuts(out)
    assert len(cuts) == 2 and [c.to_dict() for c in cuts] == [c.to_dict() for c in result.cuts]
    # A duplicated token gets its last row's id, as training's encoder (and F5-TTS) looks it up.
    assert cuts[0].custom["token_ids"] == [1, 5, 4] == [extended[t] for t in "cab"]


@pytest.mark.parametrize("tokenizer", ["char", "byte"])
def test_token_ids_are_what_training_encodes_with_the_written_vocab(tmp_path, tokenizer):
    src = tmp_path / "src"
    texts = {"a.wav": "Grüße, naïve café!", "b.wav": "日本語 and ASCII", "c.wav": "tab\tand  spaces"}
    for name, text in texts.items():
        write_tone(src / name, 1.0)
        (src / name).with_suffix(".txt").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    prepare(src, out, PrepareOptions(tokenizer=tokenizer))
    vocab = load_vocab(out / "vocab.txt") if tokenizer == "char" else None
    assert (out / "vocab.txt").exists() == (tokenizer == "char")
    encoder = TextEncoder(tokenizer, vocab)
    cuts = read_cuts(out)
    assert len(cuts) == 3
    for cut in cuts:
        text = cut.supervisions[0].text
        encoded = encoder.encode([text])
        assert cut.custom["token_ids"] == encoded.ids[0, : encoded.lengths[0]].tolist() and not encoded.unknown
    if tokenizer == "byte":
        assert cuts[0].custom["token_ids"] == list("Grüße, naïve café!".encode())


def test_pinyin_vocab_holds_syllables(tmp_path):
    pytest.importorskip("jieba")
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("你好", encoding="utf-8")
    prepare(src, tmp_path / "out", PrepareOptions(tokenizer="pinyin"))
    vocab = load_vocab(tmp_path / "out" / "vocab.txt")
    assert {"ni2", "hao3"} <= set(vocab.tokens)
    encoded = TextEncoder("pinyin", vocab).encode(["你好"])
    assert read_cuts(tmp_path / "out")[0].custom["token_ids"] == encoded.ids[0].tolist()


def test_vocab_built_from_the_data_starts_with_the_space(tmp_path):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.lab").write_text("ba, ab", encoding="utf-8")
    prepare(src, tmp_path / "out")
    assert load_vocab(tmp_path / "out" / "vocab.txt").tokens == (" ", ",", "a", "b")


def test_mel_cache_holds_the_training_mels_and_a_run_without_it_removes_it(tmp_path):
    src = tmp_path / "src"
    for i, seconds in enumerate([0.5, 1.3]):
        write_tone(src / f"{i}.flac", seconds, sample_rate=22050)
        (src / f"{i}.txt").write_text(f"utterance {i}", encoding="utf-8")
    out = tmp_path / "out"
    prepare(src, out, PrepareOptions(mels=True, mel_type="bigvgan"))
    for cut in read_cuts(out):
        assert cut.custom["mel_type"] == "bigvgan" and cut.custom["mel_path"].startswith("mels/")  # relative
        cached = read_mel(out / cut.custom["mel_path"])
        assert cached.shape == (cut.custom["frames"], 100)
        torch.testing.assert_close(cached, log_mel(load_audio(audio_path(cut, out))[None], "bigvgan")[0])

    prepare(src, out)
    assert not (out / "mels").exists()
    assert all("mel_path" not in (cut.custom or {}) for cut in read_cuts(out))


def test_limits_are_configurable(tmp_path):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 0.2)
    (src / "a.txt").write_text("hi", encoding="utf-8")
    assert prepare(src, tmp_path / "default").cuts == []
    assert len(prepare(src, tmp_path / "lenient", PrepareOptions(limits=Limits(min_seconds=0.1))).cuts) == 1
    with pytest.raises(ValueError, match="max_chars_per_second"):
        Limits(min_chars_per_second=5, max_chars_per_second=np.float64(4))


def test_preparing_in_place_never_touches_files_it_did_not_write(tmp_path: Path) -> None:
    """OUT_DIR = the input folder: a planted mel and vocab.txt survive; only our own outputs are replaced."""
    folder = tmp_path / "voice"
    for i, seconds in enumerate((0.8, 1.1, 1.3)):
        write_tone(folder / f"{i}.wav", seconds)
        (folder / f"{i}.txt").write_text(f"line {i}", encoding="utf-8")
    planted = folder / "mels" / "xx" / "mine.npy"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"not ours")
    first = prepare(folder, folder, PrepareOptions(mels=True))
    assert len(first.cuts) == 3 and planted.read_bytes() == b"not ours"
    assert first.report["outputs"] == ["cuts.jsonl.gz", "report.json", "vocab.txt"]
    assert [c.recording.sources[0].source for c in first.cuts] == ["0.wav", "1.wav", "2.wav"]  # relative
    (folder / "2.wav").unlink()  # gone: its cached mel, which we wrote, is removed on the next run
    second = prepare(folder, folder, PrepareOptions(mels=True))
    assert len(second.cuts) == 2 and planted.read_bytes() == b"not ours"
    cached = {c.custom["mel_path"] for c in first.cuts} - {c.custom["mel_path"] for c in second.cuts}
    assert len(cached) == 1 and not (folder / next(iter(cached))).exists()

    other = tmp_path / "other"
    for i, seconds in enumerate((0.8, 1.1)):
        write_tone(other / f"{i}.wav", seconds)
        (other / f"{i}.txt").write_text(f"line {i}", encoding="utf-8")
    (other / "vocab.txt").write_text("my own vocab\n", encoding="utf-8")
    before = file_digests(other)
    proc = subprocess.run(
        [sys.executable, "-m", "f5lite.prepare", str(other), str(other)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "vocab.txt exists and was not written by f5lite-prepare" in proc.stderr
    assert file_digests(other) == before


@pytest.mark.parametrize("listed", [False, True])
def test_a_directory_prepared_by_an_earlier_version_loses_its_manifest(tmp_path, listed):
    """Its manifest.jsonl and the mels it named are ours: replaced by cuts.jsonl.gz, never left beside them."""
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("hello", encoding="utf-8")
    out = tmp_path / "out"
    old_mel = out / "mels" / "zz" / "old.npy"
    old_mel.parent.mkdir(parents=True)
    np.save(old_mel, np.zeros((94, 100), dtype=np.float32))
    row = {"audio_path": "../src/a.wav", "text": "hello", "duration": 1.0, "frames": 94, "mel_path": "mels/zz/old.npy"}
    (out / "manifest.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (out / "vocab.txt").write_text(" \na\n", encoding="utf-8")
    report = {"input": "../src", "layout": "folder", "kept": 1, "skipped": [], "settings": {}}
    if listed:  # the version that listed its outputs; the first one did not
        report["outputs"] = ["manifest.jsonl", "report.json", "vocab.txt"]
    (out / "report.json").write_text(json.dumps(report), encoding="utf-8")

    result = prepare(src, out, PrepareOptions(mels=True))
    assert len(result.cuts) == 1 and result.report["outputs"] == ["cuts.jsonl.gz", "report.json", "vocab.txt"]
    assert not (out / "manifest.jsonl").exists() and not old_mel.exists() and not old_mel.parent.exists()
    assert (out / result.cuts[0].custom["mel_path"]).is_file()


def test_a_manifest_of_someone_elses_stops_the_run(tmp_path, capsys):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("hello", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.jsonl").write_text("mine\n", encoding="utf-8")
    assert main([str(src), str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.jsonl exists and was not written by f5lite-prepare" in err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.jsonl"]


def test_cut_ids_are_unique_when_two_files_differ_only_in_suffix(tmp_path):
    folder = tmp_path / "voice"
    write_tone(folder / "a.wav", 1.0)
    write_tone(folder / "a.flac", 1.0)
    (folder / "a.txt").write_text("both of them", encoding="utf-8")
    result = prepare(folder, folder)
    assert [c.id for c in result.cuts] == ["a", "a.wav"]  # sorted by path: a.flac first
    assert [c.recording.sources[0].source for c in read_cuts(folder)] == ["a.flac", "a.wav"]


def test_a_text_refused_by_a_fixed_vocab_leaves_no_mel_behind(tmp_path):
    src = tmp_path / "src"
    for name, text in {"a.wav": "abc", "b.wav": "abz"}.items():
        write_tone(src / name, 1.0)
        (src / name).with_suffix(".txt").write_text(text, encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(" \na\nb\nc\n", encoding="utf-8")
    out = tmp_path / "out"
    options = PrepareOptions(vocab=vocab, fixed_vocab=True, mels=True)
    first = prepare(src, out, options)
    assert len(first.cuts) == 1 and [s.reason for s in first.skipped] == ["unknown_chars"]
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.npy")] == [first.cuts[0].custom["mel_path"]]
    assert len(prepare(src, out, options).cuts) == 1  # the run again is not refused

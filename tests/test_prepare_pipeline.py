"""f5lite-prepare: keeps exactly the good files, says why it skipped each bad one, never touches the sources."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from data_helpers import build_messy_dataset, file_digests, write_tone

from f5lite.audio import frames_for_samples, load_audio, log_mel
from f5lite.data import read_manifest
from f5lite.data.mel_cache import read_mel
from f5lite.prepare import Limits, PrepareOptions, prepare
from f5lite.prepare.cli import main
from f5lite.text import load_vocab

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

    rows = read_manifest(out / "manifest.jsonl")
    assert {r.audio_path.name for r in rows} == good
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["kept"] == len(good)
    assert _skips(report) == sorted([*expected.items(), ("mono_24k.wav", "duplicate")])
    assert report["skipped_count"] == len(expected) + 1
    assert all(s["detail"] for s in report["skipped"])
    assert report["vocab"]["missing"]["ż"] == 1  # counted and listed

    stereo = next(r for r in rows if r.audio_path.name == "stereo_48k.flac")
    assert stereo.sample_rate == 48000 and stereo.duration == pytest.approx(1.2)
    assert stereo.frames == frames_for_samples(28800) == log_mel(load_audio(stereo.audio_path)[None]).shape[1]
    narrow = next(r for r in rows if r.audio_path.name == "narrow_8k.wav")
    assert narrow.sample_rate == 8000 and narrow.text == "A telephone rate file."

    printed = capsys.readouterr().out
    assert f"kept {len(good)} of {len(good) + len(expected) + 1}" in printed and "unknown_chars 1" in printed


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
    assert {r.audio_path.name for r in read_manifest(parallel / "manifest.jsonl")} == good | {"unknown_chars.wav"}


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


def test_nothing_usable_exits_1_and_removes_a_stale_manifest(tmp_path, capsys):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("long enough", encoding="utf-8")
    out = tmp_path / "out"
    assert main([str(src), str(out), "--workers", "1"]) == 0  # an earlier run left a manifest
    assert (out / "manifest.jsonl").exists()
    write_tone(src / "a.wav", 0.1)  # now too short: nothing is usable
    assert main([str(src), str(out), "--workers", "1"]) == 1
    assert not (out / "manifest.jsonl").exists()
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


def test_vocab_extension_keeps_every_old_id(tmp_path):
    src = tmp_path / "src"
    for name, text in {"a.wav": "cab", "b.wav": "Zebra ł"}.items():
        write_tone(src / name, 1.0)
        (src / name).with_suffix(".txt").write_text(text, encoding="utf-8")
    base_tokens = [" ", "c", "a", "ni3", "b", "a", "e"]  # unsorted, a pinyin token, a duplicate row
    base = tmp_path / "pretrained_vocab.txt"
    base.write_text("\n".join(base_tokens) + "\n", encoding="utf-8")

    result = prepare(src, tmp_path / "out", PrepareOptions(vocab=base))
    extended = load_vocab(tmp_path / "out" / "vocab.txt")
    assert extended.tokens[: len(base_tokens)] == tuple(base_tokens)
    old = load_vocab(base)
    assert all(extended[token] == old[token] for token in old.tokens)
    assert extended.tokens[len(base_tokens) :] == ("Z", "r", "ł")  # appended in code point order
    assert result.report["vocab"]["added"] == ["Z", "r", "ł"]
    assert len(result.rows) == 2


def test_vocab_built_from_the_data_starts_with_the_space(tmp_path):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.lab").write_text("ba, ab", encoding="utf-8")
    prepare(src, tmp_path / "out")
    assert load_vocab(tmp_path / "out" / "vocab.txt").tokens == (" ", ",", "a", "b")


def test_pinyin_vocab_holds_syllables(tmp_path):
    pytest.importorskip("jieba")
    src = tmp_path / "src"
    write_tone(src / "a.wav", 1.0)
    (src / "a.txt").write_text("你好", encoding="utf-8")
    prepare(src, tmp_path / "out", PrepareOptions(tokenizer="pinyin"))
    assert {"ni2", "hao3"} <= set(load_vocab(tmp_path / "out" / "vocab.txt").tokens)


def test_mel_cache_holds_the_training_mels_and_a_run_without_it_removes_it(tmp_path):
    src = tmp_path / "src"
    for i, seconds in enumerate([0.5, 1.3]):
        write_tone(src / f"{i}.flac", seconds, sample_rate=22050)
        (src / f"{i}.txt").write_text(f"utterance {i}", encoding="utf-8")
    out = tmp_path / "out"
    result = prepare(src, out, PrepareOptions(mels=True, mel_type="bigvgan"))
    for row in result.rows:
        assert row.mel_path is not None and row.mel_type == "bigvgan" and out in row.mel_path.parents
        cached = read_mel(row.mel_path)
        assert cached.shape == (row.frames, 100)
        torch.testing.assert_close(cached, log_mel(load_audio(row.audio_path)[None], "bigvgan")[0])
    assert read_manifest(out / "manifest.jsonl") == result.rows

    prepare(src, out)
    assert not (out / "mels").exists()
    assert all(row.mel_path is None for row in read_manifest(out / "manifest.jsonl"))


def test_limits_are_configurable(tmp_path):
    src = tmp_path / "src"
    write_tone(src / "a.wav", 0.2)
    (src / "a.txt").write_text("hi", encoding="utf-8")
    assert prepare(src, tmp_path / "default").rows == []
    assert len(prepare(src, tmp_path / "lenient", PrepareOptions(limits=Limits(min_seconds=0.1))).rows) == 1
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
    assert len(first.rows) == 3 and planted.read_bytes() == b"not ours"
    assert first.report["outputs"] == ["manifest.jsonl", "report.json", "vocab.txt"]
    (folder / "2.wav").unlink()  # gone: its cached mel, which we wrote, is removed on the next run
    second = prepare(folder, folder, PrepareOptions(mels=True))
    assert len(second.rows) == 2 and planted.read_bytes() == b"not ours"
    cached = {r.mel_path for r in first.rows} - {r.mel_path for r in second.rows}
    assert len(cached) == 1 and not next(iter(cached)).exists()

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

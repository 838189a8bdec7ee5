"""`f5lite-transcribe` as users run it: a process, killed half-way and run again, its exit codes and summary, a
second run on the same OUT, a file name that is not UTF-8; and the whole path from raw recordings through
`f5lite-prepare` to a few fine-tuning updates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from support.data_helpers import file_digests
from support.f5tts_fixtures import ASSETS, overrides
from support.transcribe_assets import build_recording

from f5lite.config import compose_config
from f5lite.prepare import PrepareOptions, prepare
from f5lite.train import Trainer
from f5lite.transcribe.workspace import CLIPS_DIR, STATE_DIR

pytest.importorskip("silero_vad")
pytest.importorskip("pocketsphinx")


def cli(*args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "f5lite.transcribe", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As a terminal starts it: a suite run in the background inherits SIGINT ignored, which Python keeps.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("raw")
    for i, speaker in enumerate(("us_male", "gb_female", "caribbean_female")):
        build_recording(root / f"{speaker}.wav", speaker, 4, seed=i)
    return root


def without_timing(report: dict) -> list[dict]:
    return [{k: v for k, v in source.items() if k != "seconds_taken"} for source in report["sources"]]


@pytest.mark.slow  # 24 s; the default suite keeps the worker killed for memory, and the workspace's recovery tests
def test_a_killed_run_continues_where_it_stopped(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = cli(raw, out, "--workers", "1")
    records = out / STATE_DIR / "sources"
    deadline = time.monotonic() + 120
    while not (records.is_dir() and any(records.iterdir())):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)  # no chance to tidy up
    first.communicate()
    done = {json.loads(p.read_text())["key"] for p in records.iterdir()}
    assert 1 <= len(done) < 3
    published = {key: file_digests(out / CLIPS_DIR / Path(key).stem) for key in done}
    second = cli(raw, out, "--workers", "2")
    stdout, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    for key, digests in published.items():
        assert file_digests(out / CLIPS_DIR / Path(key).stem) == digests  # finished before the kill: untouched
    straight = cli(raw, tmp_path / "straight")
    straight.communicate(timeout=300)
    assert straight.returncode == 0
    assert {k: d for k, (d, _) in file_digests(out / CLIPS_DIR).items()} == {
        k: d for k, (d, _) in file_digests(tmp_path / "straight" / CLIPS_DIR).items()
    }
    report = json.loads((out / "report.json").read_text())
    assert without_timing(report) == without_timing(json.loads((tmp_path / "straight" / "report.json").read_text()))
    assert not (out / STATE_DIR / "staging").exists()
    assert f"next: f5lite-prepare {out / CLIPS_DIR} DATA_DIR" in stdout
    assert "3 recording(s)" in stdout and f"{report['totals']['clips_kept']} clip(s) kept" in stdout


def test_exit_codes_and_one_line_errors(raw: Path, tmp_path: Path) -> None:
    bad = cli(raw, tmp_path / "out", "--min-seconds", "30")
    _, stderr = bad.communicate(timeout=120)
    assert bad.returncode == 2
    assert stderr.strip().splitlines()[-1] == (
        "f5lite-transcribe: error: min_seconds=30.0 and max_seconds=20.0 are not valid; they need 0 < min_seconds "
        "< max_seconds"
    )
    assert not (tmp_path / "out").exists()
    (tmp_path / "quiet").mkdir()
    sf.write(tmp_path / "quiet" / "room.wav", 0.001 * np.random.default_rng(0).standard_normal(16_000 * 3), 16_000)
    nothing = cli(tmp_path / "quiet", tmp_path / "out2")
    stdout, stderr = nothing.communicate(timeout=120)
    assert nothing.returncode == 1, stderr
    assert "no speech: room.wav" in stdout and "Traceback" not in stderr


@pytest.mark.heavy
def test_a_second_run_on_the_same_out_is_refused_at_once_and_the_first_one_finishes(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    build_recording(raw / "talk.wav", "us_female", 1)
    first = cli(raw, out, "--workers", "1")
    deadline = time.monotonic() + 120
    while not (out / STATE_DIR / "run.json").is_file():  # the first run has passed its checks: it holds OUT
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    first.send_signal(signal.SIGSTOP)  # keep it in the middle of its work while the second one tries
    try:
        before = sorted(out.rglob("*")), file_digests(out)
        second = cli(raw, out, "--workers", "1")
        _, stderr = second.communicate(timeout=120)
        assert second.returncode == 2 and "Traceback" not in stderr
        assert stderr.strip().splitlines()[-1] == (
            f"f5lite-transcribe: error: OUT {out} is in use by another f5lite-transcribe run; wait for it to end, or "
            "choose another OUT"
        )
        assert (sorted(out.rglob("*")), file_digests(out)) == before  # the second run touched nothing
    finally:
        first.send_signal(signal.SIGCONT)
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    kept = [clip["file"] for source in report["sources"] for clip in source["clips"]]
    assert len(kept) == 1 and not (out / STATE_DIR / "staging").exists()
    written = sorted(p.relative_to(out).as_posix() for p in (out / CLIPS_DIR).rglob("*.*"))
    assert written == sorted(name for clip in kept for name in (clip, clip.removesuffix(".wav") + ".txt"))


def test_a_file_name_that_is_not_utf8_is_one_failure_and_the_others_are_transcribed(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    build_recording(raw / "talk.wav", "us_female", 1)
    os.rename(build_recording(raw / "odd.wav", "gb_male", 1).path, os.fsencode(raw) + b"/caf\xe9.wav")
    run = cli(raw, out, "--workers", "1")
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0 and "Traceback" not in stderr, stderr
    assert "failed: caf\\xe9.wav: its path under IN is not valid UTF-8" in stdout
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    statuses = {source["source"]: source["status"] for source in report["sources"]}
    assert statuses == {"caf\\xe9.wav": "failed", "talk.wav": "transcribed"}  # the name, legible
    assert report["totals"]["failed"] == 1 and report["totals"]["clips_kept"] == 1
    assert "<h2>caf\\xe9.wav</h2><p class=failed>Not transcribed: its path under IN is not valid UTF-8" in (
        out / "report.html"
    ).read_text(encoding="utf-8")
    assert [p.relative_to(out).as_posix() for p in (out / CLIPS_DIR).rglob("*.wav")] == ["clips/talk/talk_00001.wav"]


@pytest.mark.heavy
def test_from_raw_recordings_to_fine_tuning_updates(raw: Path, tmp_path: Path) -> None:
    """Raw recordings -> f5lite-transcribe (--vocab-of the pretrained model) -> f5lite-prepare -> fine-tune recipe."""
    out = tmp_path / "clips_out"
    run = cli(raw, out, "--vocab-of", ASSETS / "vocab.txt")
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr
    # The fixture model's vocab has capitals A-H and digits only: every lowercase letter is missing, and named.
    assert "token(s) missing from" in stdout and f"--vocab {out / 'vocab.txt'}" in stdout
    base = (ASSETS / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert (out / "vocab.txt").read_text(encoding="utf-8").splitlines()[: len(base)] == base
    data = tmp_path / "data"
    prepared = prepare(out / CLIPS_DIR, data, PrepareOptions(vocab=out / "vocab.txt"))
    assert len(prepared.cuts) == json.loads((out / "report.json").read_text())["totals"]["clips_kept"] >= 10
    trainer = Trainer(compose_config(overrides(data, tmp_path / "run", "optim.max_updates=2")))
    trainer.fit()
    assert trainer.update == 2
    assert os.path.isdir(tmp_path / "run")


@pytest.mark.heavy
def test_ctrl_c_stops_the_workers_at_once_and_says_how_to_continue(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = cli(raw, out, "--workers", "2")
    staging = out / STATE_DIR / "staging"
    deadline = time.monotonic() + 120
    while not (staging.is_dir() and any(staging.iterdir())):  # the workers are at work
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.02)
    started = time.monotonic()
    run.send_signal(signal.SIGINT)  # to the main process only: it must stop its workers itself
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130 and time.monotonic() - started < 10
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "f5lite-transcribe: interrupted; the same command continues where this run stopped"
    )
    again = cli(raw, out, "--workers", "2")
    again.communicate(timeout=300)
    assert again.returncode == 0 and len(list((out / STATE_DIR / "sources").iterdir())) == 3


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.heavy
def test_a_worker_killed_for_memory_ends_the_run_in_one_line_and_the_next_run_finishes(
    raw: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run = cli(raw, out, "--workers", "2")
    staging = out / STATE_DIR / "staging"
    deadline = time.monotonic() + 120
    while not (staging.is_dir() and any(staging.iterdir())):  # the workers are at work
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.02)
    workers = [p for p in children(run.pid) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert workers
    os.kill(workers[0], signal.SIGKILL)  # as the kernel's out-of-memory killer would
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 2 and "Traceback" not in stderr
    assert "a worker process died" in stderr.strip().splitlines()[-1]
    again = cli(raw, out, "--workers", "2")
    again.communicate(timeout=300)
    assert again.returncode == 0 and len(list((out / STATE_DIR / "sources").iterdir())) == 3

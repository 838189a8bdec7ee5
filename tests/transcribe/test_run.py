"""`f5lite-transcribe` on long recordings built from the demo clips: where it cuts, what it writes, what it reports.

Three recordings of one speaker each, with pauses of 0.2 to 1.5 s and mild noise: a 24 kHz mono WAV, a 44.1 kHz
stereo FLAC in a sub-folder, a 16 kHz OGG with a lone short utterance at its end; beside them a file with a broken
header, a FLAC that breaks off, and one of noise only. One run (two worker processes) serves every test here, but
the last: files under IN that no recording can come from, on a run of their own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from support.data_helpers import file_digests
from support.transcribe_assets import Recording, build_recording

from f5lite.metrics.asr import load_recognizer
from f5lite.prepare import PrepareOptions, prepare
from f5lite.transcribe.recognise import normalise_transcript
from f5lite.transcribe.run import TranscribeOptions, TranscribeResult, transcribe
from f5lite.transcribe.workspace import CLIPS_DIR, STATE_DIR

# Recordings transcribed end to end by the offline recogniser, shared by the module: `make test-heavy` (CI runs it).
pytestmark = pytest.mark.heavy

pytest.importorskip("silero_vad")
pytest.importorskip("pocketsphinx")
TOLERANCE = 0.25  # seconds: how close a clip's edge must be to its utterance's speech
COUNT = 6  # utterances per recording: every pause length of transcribe_assets.PAUSES, one of them twice


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Recording], TranscribeResult, dict]:
    root = tmp_path_factory.mktemp("transcribe")
    raw = root / "raw"
    recordings = {
        "us_male.wav": build_recording(raw / "us_male.wav", "us_male", COUNT),
        "gb/gb_female.flac": build_recording(raw / "gb" / "gb_female.flac", "gb_female", COUNT, rate=44_100, stereo=True, seed=1),
        "scottish_male.ogg": build_recording(raw / "scottish_male.ogg", "scottish_male", COUNT, rate=16_000, seed=2, short_tail=True),
    }  # fmt: skip
    (raw / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" + bytes(200))
    full = (raw / "us_male.wav").read_bytes()
    sf.write(raw / "cut_off.flac", sf.read(raw / "us_male.wav")[0], 24_000)
    (raw / "cut_off.flac").write_bytes((raw / "cut_off.flac").read_bytes()[: len(full) // 6])
    sf.write(raw / "noise.wav", 0.002 * np.random.default_rng(3).standard_normal(24_000 * 6), 24_000)
    before = file_digests(raw)
    result = transcribe(raw, root / "out", TranscribeOptions(workers=2))
    assert file_digests(raw) == before  # the input is only read
    return raw, root / "out", recordings, result, result.report


def entry(report: dict, source: str) -> dict:
    (found,) = [e for e in report["sources"] if e["source"] == source]
    return found


def test_clip_edges_are_found_at_the_utterances_speech(run) -> None:
    _, _, recordings, _, report = run
    found = total = 0
    for key, recording in recordings.items():
        clips = entry(report, key)["clips"]
        for start, end in recording.speech[:COUNT]:  # the short tail is left out, below
            total += 2
            found += any(abs(c["start"] - start) <= TOLERANCE for c in clips)
            found += any(abs(c["end"] - end) <= TOLERANCE for c in clips)
    assert found >= 0.9 * total, f"{found} of {total} boundaries found within {TOLERANCE} s"


def test_no_clip_cuts_through_an_utterances_speech(run) -> None:
    _, _, recordings, _, report = run
    for key, recording in recordings.items():
        for clip in entry(report, key)["clips"]:
            for start, end in recording.speech:
                for edge in (clip["start"], clip["end"]):
                    # 20 ms: the onset measured at 40 dB under the loudest frame, a breath rather than a word
                    assert not start + 0.02 < edge < end - 0.02, (key, clip, (start, end))


def test_each_clip_is_written_with_the_offline_recognisers_transcript_of_it(run) -> None:
    _, out, recordings, _, report = run
    recognizer = load_recognizer("pocketsphinx")
    kept = [clip for key in recordings for clip in entry(report, key)["clips"]]
    written = sorted(p.relative_to(out).as_posix() for p in (out / CLIPS_DIR).rglob("*.wav"))
    assert written == sorted(clip["file"] for clip in kept)  # only kept clips are written
    assert len(kept) >= 0.9 * COUNT * len(recordings)
    for clip in kept:
        wave, rate = sf.read(out / clip["file"], dtype="float32")
        assert wave.ndim == 1 and len(wave) / rate == pytest.approx(clip["end"] - clip["start"], abs=1e-3)
        heard = normalise_transcript(recognizer.transcribe(torch.from_numpy(wave), rate))
        text = (out / clip["file"]).with_suffix(".txt").read_text(encoding="utf-8")
        assert text == f"{heard}\n" and clip["text"] == heard and heard
        assert 0.0 <= clip["confidence"] <= 1.0
    assert entry(report, "gb/gb_female.flac")["sample_rate"] == 44_100
    assert sf.info(out / entry(report, "gb/gb_female.flac")["clips"][0]["file"]).samplerate == 44_100


def test_every_stretch_of_speech_is_kept_or_listed_with_its_reason(run) -> None:
    _, _, recordings, _, report = run
    for key, recording in recordings.items():
        source = entry(report, key)
        spans = [(c["start"], c["end"], None) for c in source["clips"]]
        spans += [(s["start"], s["end"], s["reason"]) for s in source["left_out"]]
        for start, end in recording.speech:
            holders = [reason for a, b, reason in spans if a <= start + TOLERANCE and b >= end - TOLERANCE]
            assert holders, (key, start, end)
            assert all(reason is None or reason.strip() for reason in holders)
    tail = entry(report, "scottish_male.ogg")["left_out"]
    assert any(
        "shorter than min_seconds=2" in s["reason"]
        and s["start"] > recordings["scottish_male.ogg"].speech[COUNT - 1][1]
        for s in tail
    )


def test_unreadable_files_are_reported_and_skipped_and_noise_gives_no_clips(run) -> None:
    _, out, _, result, report = run
    failed = {e["source"]: e["message"] for e in report["sources"] if e["status"] == "failed"}
    assert set(failed) == {"broken.wav", "cut_off.flac"} == {f.key for f in result.failures}
    assert all("\n" not in message and message for message in failed.values())
    assert entry(report, "noise.wav")["status"] == "no speech" and entry(report, "noise.wav")["clips"] == []
    assert not (out / CLIPS_DIR / "noise").exists() and not (out / CLIPS_DIR / "broken").exists()
    assert report["totals"]["failed"] == 2 and report["totals"]["no_speech"] == 1
    assert not (out / STATE_DIR / "staging").exists()
    page = (out / "report.html").read_text(encoding="utf-8")
    for source in report["sources"]:
        assert source["source"] in page
    assert "no speech found" in page and "Not transcribed" in page and "shorter than min_seconds" in page
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == report


def test_f5lite_prepare_reads_the_clips_and_takes_a_corrected_text(run, tmp_path: Path) -> None:
    _, out, recordings, _, report = run
    clip = entry(report, "gb/gb_female.flac")["clips"][1]
    corrected = out / Path(clip["file"]).with_suffix(".txt")
    original = corrected.read_text(encoding="utf-8")
    try:
        corrected.write_text("Corrected by hand.\n", encoding="utf-8")
        result = prepare(out / CLIPS_DIR, tmp_path / "data", PrepareOptions())
    finally:
        corrected.write_text(original, encoding="utf-8")
    assert len(result.cuts) == report["totals"]["clips_kept"]
    texts = {Path(cut.recording.sources[0].source).name: cut.supervisions[0] for cut in result.cuts}
    assert texts[Path(clip["file"]).name].text == "Corrected by hand."
    assert texts[Path(clip["file"]).name].speaker == "gb"  # a recording in a folder of IN: that folder's speaker
    assert {s.speaker for s in texts.values()} == {"gb", "us_male", "scottish_male"}


def test_a_second_run_skips_finished_files_and_retries_failed_ones(run) -> None:
    raw, out, _, _, report = run
    before = file_digests(out / CLIPS_DIR) | file_digests(out / STATE_DIR)
    again = transcribe(raw, out, TranscribeOptions())
    assert {f.key for f in again.failures} == {"broken.wav", "cut_off.flac"}  # tried again, still broken
    assert file_digests(out / CLIPS_DIR) | file_digests(out / STATE_DIR) == before  # nothing rewritten
    assert again.report["sources"] == report["sources"]


def test_files_no_recording_can_come_from_are_reported_and_the_others_transcribed(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    build_recording(raw / "talks.wav" / "talk.wav", "us_female", 1)  # a folder named like a recording: read inside
    os.mkfifo(raw / "pipe.wav")  # would block a reader for ever
    (raw / "loop.wav").symlink_to("loop.flac")
    (raw / "loop.flac").symlink_to("loop.wav")
    (raw / "gone.ogg").symlink_to("nowhere.ogg")
    result = transcribe(raw, tmp_path / "out", TranscribeOptions())
    assert {f.key: f.message for f in result.failures} == {
        "gone.ogg": "cannot be read: No such file or directory",
        "loop.flac": "cannot be read: Too many levels of symbolic links",
        "loop.wav": "cannot be read: Too many levels of symbolic links",
        "pipe.wav": "not a regular file (a pipe or a device): nothing to read a recording from",
    }
    assert entry(result.report, "talks.wav/talk.wav")["status"] == "transcribed"
    clips = tmp_path / "out" / CLIPS_DIR
    assert sorted(p.relative_to(clips).as_posix() for p in clips.rglob("*")) == [
        "talks.wav",  # the folder of IN, as a folder
        "talks.wav/talk",
        "talks.wav/talk/talk_00001.txt",
        "talks.wav/talk/talk_00001.wav",
    ]

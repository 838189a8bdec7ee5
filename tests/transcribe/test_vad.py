"""Silero VAD over a long recording read in blocks (`f5lite.transcribe.vad`), and the slicer on what it finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.functional as AF

from f5lite.paths import demo_dir
from f5lite.transcribe.slicing import SliceSettings, plan_clips, speech_runs
from f5lite.transcribe.vad import WINDOW_SECONDS, load_vad_model, speech_track

pytest.importorskip("silero_vad")
CLIPS = ["000_us_male.ogg", "005_us_male.ogg", "006_us_male.ogg", "010_us_male.ogg"]
PAUSES = [0.4, 0.8, 1.2]
LEAD = 0.5


@pytest.fixture(scope="module")
def model() -> torch.jit.ScriptModule:
    return load_vad_model()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[float, float]]]:
    """Four demo clips of one speaker with pauses and mild noise, as 44.1 kHz stereo FLAC; each clip's place (s)."""
    rate = 24_000
    g = torch.Generator().manual_seed(0)
    parts, places, t = [torch.zeros(round(LEAD * rate))], [], LEAD
    for name, pause in zip(CLIPS, [*PAUSES, LEAD], strict=True):
        wave, sr = sf.read(demo_dir() / "audio" / "us_male" / name, dtype="float32")
        assert sr == rate
        parts += [torch.from_numpy(wave), torch.zeros(round(pause * rate))]
        places.append((t, t + len(wave) / rate))
        t += len(wave) / rate + pause
    mono = torch.cat(parts)
    mono = mono + 0.002 * torch.randn(mono.shape, generator=g)  # mild noise, about -54 dB
    stereo = AF.resample(mono, rate, 44_100)[:, None].repeat(1, 2) * torch.tensor([1.0, 0.8])
    path = tmp_path_factory.mktemp("rec") / "long.flac"
    sf.write(path, stereo.numpy(), 44_100)
    return path, places


def test_the_track_covers_the_recording(model, recording) -> None:
    path, _ = recording
    track = speech_track(path, model, block_seconds=1.7)  # many blocks, none a whole number of windows
    assert (track.sample_rate, track.channels) == (44_100, 2)
    assert track.duration == pytest.approx(sf.info(path).duration)
    assert len(track.probs) == len(track.rms_db) == int(np.ceil(track.duration / WINDOW_SECONDS - 1e-6))
    assert track.probs.min() >= 0.0 and track.probs.max() <= 1.0


def test_reading_in_blocks_finds_the_speech_of_reading_whole(model, recording) -> None:
    path, _ = recording
    settings = SliceSettings()
    small, whole = speech_track(path, model, block_seconds=1.7), speech_track(path, model, block_seconds=600)
    runs_small = speech_runs(small.probs, WINDOW_SECONDS, settings)
    runs_whole = speech_runs(whole.probs, WINDOW_SECONDS, settings)
    assert len(runs_small) == len(runs_whole)
    for a, b in zip(runs_small, runs_whole, strict=True):
        assert abs(a[0] - b[0]) <= 2 and abs(a[1] - b[1]) <= 2  # within 64 ms: resampling edges of the blocks


def test_clips_are_the_source_utterances_cut_in_their_pauses(model, recording) -> None:
    path, places = recording
    track = speech_track(path, model)
    clips, left = plan_clips(track.probs, track.rms_db, WINDOW_SECONDS, track.duration, SliceSettings())
    assert left == [] and len(clips) == len(places)
    for clip, (start, end) in zip(clips, places, strict=True):
        # Each clip holds its whole source utterance and nothing of its neighbours.
        assert clip.start <= start + 0.25 and clip.end >= end - 0.25
    for (_, end), (start, _), a, b in zip(places, places[1:], clips, clips[1:], strict=False):
        true_boundary = (end + start) / 2
        cut = (a.end + b.start) / 2
        assert abs(cut - true_boundary) <= 0.25  # found within 0.25 s (measured: within 0.03 s)
        assert end - 0.25 <= a.end and b.start <= start + 0.25 and a.end <= b.start


def test_an_unreadable_file_is_one_clear_error(model, tmp_path) -> None:
    bad = tmp_path / "broken.wav"
    bad.write_bytes(b"RIFF not really a wave file")
    with pytest.raises(ValueError, match="broken.wav: not readable as audio"):
        speech_track(bad, model)


def test_a_file_that_breaks_off_is_one_clear_error(model, recording, tmp_path) -> None:
    # A valid header, then half the data: the error comes while reading blocks, not at opening.
    path, _ = recording
    data = path.read_bytes()
    cut = tmp_path / "cut.flac"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.flac: unreadable audio"):
        speech_track(cut, model, block_seconds=1.0)


def test_loading_the_model_leaves_torch_threads_as_they_were() -> None:
    # silero_vad's import sets torch's threads to 1 for the whole process; a fresh process sees that import.
    code = (
        "import torch; torch.set_num_threads(2); from f5lite.transcribe.vad import load_vad_model; "
        "load_vad_model(); print(torch.get_num_threads())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2"

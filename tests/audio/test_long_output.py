"""save_audio on long outputs: 180 s in every format the tools write, and no half-written file after a failure.

libvorbis (inside libsndfile) copies an Ogg Vorbis stream's first write onto the stack, 4 bytes a frame, so a
waveform written in one call killed the process with SIGSEGV from about 2.1 million frames (87 s at 24 kHz) on an
8 MiB stack: `f5lite-infer output=x.ogg` lost a 120 s synthesis at its very end. The long lossy writes run in a
child process, so a crash there fails the test instead of killing pytest, and in a thread whose stack is set, so the
outcome does not depend on the shell's `ulimit -s`. WAV and FLAC, which libsndfile writes at any length in one call,
are written in this process.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from f5lite.audio import AudioError, load_audio, save_audio
from f5lite.audio.io import AUDIO_EXTENSIONS

RATE = 24_000
SECONDS = 180
STACK = 1 << 20
"""The writing thread's stack: 1 MiB (Windows' default, and less than any Linux or macOS main thread's)."""

# Loads the waveform saved by the test and writes it with save_audio from a thread of STACK bytes of stack.
_WRITER = textwrap.dedent(
    """
    import sys, threading
    import numpy as np, torch
    from f5lite.audio import save_audio

    source, target, rate, stack = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    wave = torch.from_numpy(np.load(source))
    failed = []
    def write():
        try:
            save_audio(target, wave, rate)
        except BaseException as err:
            failed.append(err)
    threading.stack_size(stack)
    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    sys.exit(f"save_audio failed: {failed[0]!r}" if failed else 0)
    """
)


def writable(suffix: str) -> bool:
    """Whether this libsndfile writes the format of `suffix` (MP3 from 1.1.0, Opus from 1.0.29)."""
    file_format, subtype = {".mp3": ("MP3", "MPEG_LAYER_III"), ".opus": ("OGG", "OPUS")}.get(suffix, ("WAV", None))
    return bool(sf.check_format(file_format, subtype))


def tone_with_noise(seconds: float, rate: int = RATE) -> np.ndarray:
    """A 440 Hz tone at 0.4 under noise at 0.05 RMS, float32 `[samples]`: every block differs from the next."""
    t = np.arange(round(seconds * rate)) / rate
    noise = np.random.default_rng(0).standard_normal(t.shape[0])
    return (0.4 * np.sin(2 * math.pi * 440 * t) + 0.05 * noise).astype(np.float32)


def write_in_child(tmp_path: Path, wave: np.ndarray, target: Path) -> subprocess.CompletedProcess[str]:
    """Run save_audio(target, wave, RATE) in a child process, in a thread of `STACK` bytes of stack."""
    source = tmp_path / "wave.npy"
    np.save(source, wave)
    command = [sys.executable, "-c", _WRITER, str(source), str(target), str(RATE), str(STACK)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def check_round_trip(path: Path, wave: np.ndarray, lossless: bool) -> None:
    """Read `path` back: every sample of a lossless file; a lossy one's length, shape and level to the last second."""
    data, rate = sf.read(path, dtype="float32")
    assert rate == RATE and data.ndim == 1
    if lossless:  # 16-bit PCM (the WAV and FLAC default): every sample within one step
        assert data.shape[0] == wave.shape[0]
        np.testing.assert_allclose(data, wave, rtol=0, atol=1 / 2**15)
        return
    assert abs(data.shape[0] - wave.shape[0]) <= 2048  # a codec frame's padding at most
    frames = min(data.shape[0], wave.shape[0])
    assert np.corrcoef(data[:frames], wave[:frames])[0, 1] > 0.98
    for part in (slice(0, RATE), slice(frames - RATE, frames)):
        level = float(np.sqrt(np.mean(data[part] ** 2)) / np.sqrt(np.mean(wave[part] ** 2)))
        assert 0.9 < level < 1.1, f"level {level:.3f} of the samples {part}"


@pytest.mark.parametrize(
    "suffix",
    [
        ".ogg",  # the one that crashed
        pytest.param(".opus", marks=pytest.mark.heavy),  # these two encode slowly: 15 s and more together
        pytest.param(".mp3", marks=pytest.mark.heavy),
    ],
)
def test_180_s_of_a_lossy_format_is_written_whole_without_a_crash(tmp_path: Path, suffix: str) -> None:
    if not writable(suffix):
        pytest.skip(f"this libsndfile cannot write {suffix}")
    wave = tone_with_noise(SECONDS)
    target = tmp_path / f"long{suffix}"

    done = write_in_child(tmp_path, wave, target)

    # A negative code is the signal that killed the child (-11: SIGSEGV).
    assert done.returncode == 0, f"the writer exited with {done.returncode}: {done.stderr[-2000:]}"
    check_round_trip(target, wave, lossless=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name, "wave.npy"]  # no temporary file left


@pytest.mark.parametrize("suffix", [".wav", ".flac"])
def test_180_s_of_a_lossless_format_round_trips_sample_for_sample(tmp_path: Path, suffix: str) -> None:
    # libsndfile's WAV and FLAC writers take any length in one call: these run in this process, through the blocks.
    wave = tone_with_noise(SECONDS)
    target = tmp_path / f"long{suffix}"

    save_audio(target, torch.from_numpy(wave), RATE)

    check_round_trip(target, wave, lossless=True)


@pytest.mark.heavy  # a child process of its own (3 s of imports on 2 cores), for a kill no clean-up survives
def test_a_crash_while_writing_leaves_the_previous_file_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "out.wav"
    save_audio(target, torch.full((RATE,), 0.25), RATE)
    before = target.read_bytes()
    # The child dies (no clean-up, no close) as libsndfile takes the samples.
    code = textwrap.dedent(
        f"""
        import os, soundfile as sf, torch
        from f5lite.audio import save_audio
        sf.SoundFile.write = lambda self, data: os._exit(3)
        save_audio({str(target)!r}, torch.zeros({10 * RATE}), {RATE})
        """
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert done.returncode == 3, done.stderr[-2000:]
    assert target.read_bytes() == before


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.flac"
    save_audio(target, torch.full((RATE,), 0.25), RATE)
    before = target.read_bytes()

    def refuse(self: sf.SoundFile, data: np.ndarray) -> None:
        raise sf.LibsndfileError(2, prefix="Error writing the file: ")  # "System error.": a full disk, say

    monkeypatch.setattr(sf.SoundFile, "write", refuse)
    with pytest.raises(AudioError, match=re.escape(f"cannot write audio file '{target}': System error.")):
        save_audio(target, torch.zeros(10 * RATE), RATE)

    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["out.flac"]


@pytest.mark.parametrize("suffix", sorted(AUDIO_EXTENSIONS))
def test_every_suffix_the_tools_read_is_also_written(tmp_path: Path, suffix: str) -> None:
    if not writable(suffix):
        pytest.skip(f"this libsndfile cannot write {suffix}")
    wave = torch.from_numpy(tone_with_noise(0.5))
    target = tmp_path / f"short{suffix}"

    save_audio(target, wave, RATE)

    back = load_audio(target)
    assert abs(back.shape[0] - wave.shape[0]) <= 2048
    assert float(back.pow(2).mean().sqrt()) == pytest.approx(float(wave.pow(2).mean().sqrt()), rel=0.1)


def test_a_suffix_that_names_no_format_is_refused_in_one_line(tmp_path: Path) -> None:
    for name in ("out", "out.xyz", "out.tmp"):
        with pytest.raises(AudioError, match=r"^cannot write audio file '.*': the suffix '.*' names no audio"):
            save_audio(tmp_path / name, torch.zeros(100), RATE)
    assert not list(tmp_path.iterdir())

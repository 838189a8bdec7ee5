"""A real `f5lite-serve` process on a free port, with the tiny random model and demo voices, for the server tests."""

from __future__ import annotations

import io
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import av
import httpx

from f5lite.paths import demo_dir
from support.infer_assets import make_model_files

KEY = "test-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_voices(root: Path) -> tuple[Path, dict[str, str]]:
    """A voices folder: two demo clips with transcripts and one (an OGG) without, which the server transcribes."""
    folder = root / "voices"
    folder.mkdir()
    rows = [line.split("|") for line in (demo_dir() / "metadata.csv").read_text().splitlines()[1:]]
    texts = {}
    for speaker in ("us_male", "us_female", "caribbean_female"):
        audio, text, _ = next(row for row in rows if row[2] == speaker)
        shutil.copy(demo_dir() / audio, folder / f"{speaker}.ogg")
        if speaker != "caribbean_female":
            (folder / f"{speaker}.txt").write_text(f"{text}\n")
        texts[speaker] = text
    return folder, texts


@contextmanager
def server(root: Path, *args: str) -> Iterator[str]:
    """Start `python -m f5lite.serve` with the tiny export; yield its base URL once `/health` says ready."""
    with server_process(root, *args) as (url, _):
        yield url


@contextmanager
def server_process(
    root: Path, *args: str, open_files: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`server`, yielding the process too (its pid, for /proc); `open_files`: its open-file limit (`ulimit -n`)."""
    export = root / "export"
    if not export.is_dir():
        make_model_files(root)
    port = free_port()
    log = (root / f"server-{port}.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "f5lite.serve",
            f"model={export}",
            "sample.vocoder=griffin_lim",
            "--port",
            str(port),
            *args,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_file_limit(open_files),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (root / f"server-{port}.log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not get ready in 120 s"
            time.sleep(0.2)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # never left behind, even when a planted bug keeps it from stopping
            process.wait(timeout=30)
            raise
        finally:
            log.close()


def _file_limit(files: int | None) -> Callable[[], None] | None:
    """A `preexec_fn` that gives the child an open-file limit of `files` (`ulimit -n`); None: the parent's."""
    if files is None:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


def server_log(root: Path, url: str) -> str:
    """What the server at `url`, started by `server_process` in `root`, has logged so far."""
    return (root / f"server-{url.rsplit(':', 1)[1]}.log").read_text()


def seconds_of(data: bytes, fmt: str) -> float:
    """The decoded length of a response in `fmt` (PyAV for the containers, the byte count for raw PCM)."""
    if fmt == "pcm":
        return len(data) / 2 / 24_000
    container = av.open(io.BytesIO(data))
    samples = sum(frame.samples for frame in container.decode(audio=0))
    return samples / container.streams.audio[0].rate

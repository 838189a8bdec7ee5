"""A real `f5lite-studio` process on a free port over a test workspace, and a `gradio_client` to drive it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from f5lite.credentials import STUDIO_AUTH_ENV
from support.infer_assets import make_model_files
from support.serve_assets import free_port

AUTH = ("tester", "s3cret")


class Studio:
    """`python -m f5lite.studio --root ROOT` in a session of its own, restartable on the same root and port.

    Args:
        root: the workspace.
        auth: the login, or None for an open studio.
        args: further command-line options.
        env: further environment variables; the login goes there instead of `--auth` when it holds `STUDIO_AUTH_ENV`.
    """

    def __init__(
        self,
        root: Path,
        auth: tuple[str, str] | None = AUTH,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.auth = auth
        self.args = list(args)
        self.env = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen[bytes] | None = None
        self.client: Client | None = None

    def start(self) -> Client:
        """Start the studio; return a client once the page answers."""
        args = ["--root", str(self.root), "--port", str(self.port), "sample.vocoder=griffin_lim", "device=cpu"]
        if self.auth and STUDIO_AUTH_ENV not in self.env:
            args += ["--auth", ":".join(self.auth)]
        log = open(self.root.parent / f"studio-{self.port}.log", "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "f5lite.studio", *args, *self.args], stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, **self.env},
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, self.log()
            try:
                if httpx.get(f"{self.url}gradio_api/info", timeout=2).status_code in (200, 401, 403):
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the studio did not answer in 120 s:\n" + self.log()
            time.sleep(0.3)
        self.client = Client(self.url, auth=self.auth, verbose=False)
        return self.client

    def log(self) -> str:
        """The studio's output so far."""
        return (self.root.parent / f"studio-{self.port}.log").read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM to the studio process only (jobs it started run on in their own sessions)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        if self.client is not None:
            self.client.close()
            self.client = None


def refused(client: Client, *args: Any, api_name: str) -> str:
    """The one-line message the page shows for a refused call."""
    with pytest.raises(AppError) as err:
        client.predict(*args, api_name=api_name)
    message = str(err.value)
    assert "Traceback" not in message and "\n" not in message.strip()
    return message


def wait_for(check, timeout: float, what: str, every: float = 0.5):  # type: ignore[no-untyped-def]
    """Call `check()` until it returns something true; return that (fail after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(every)


def workspace_with_tiny_model(base: Path, project: str) -> Path:
    """A studio workspace under `base` whose `project` holds the tiny random test model as `exports/tiny`."""
    root = base / "workspace"
    export, _ = make_model_files(base)
    (root / project / "exports").mkdir(parents=True)
    shutil.copytree(export, root / project / "exports" / "tiny")
    return root

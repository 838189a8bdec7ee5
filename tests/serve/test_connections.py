"""`f5lite-serve`'s connections, as a real process against raw sockets and ordinary clients: a request head must come
within `--header-timeout` and a body within `--body-timeout` however it is trickled, more idle connections than the
open-file limit allows neither lock clients out nor flood the log, and a request must name this server in its
`Host`."""

from __future__ import annotations

import select
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from support.serve_assets import make_voices, server_log, server_process  # noqa: E402

from f5lite.serve.cli import _parser, _settings  # noqa: E402
from f5lite.serve.config import compose_serve_config  # noqa: E402

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 4.0
SEND_TIMEOUT = 3.0  # longer than the 1 s between two bytes of a trickled body
MARGIN = 10.0  # for a busy two-core machine; the deadlines above are what is tested, not speed
ALLOWED = "tts.example"
Served = tuple[str, subprocess.Popen[bytes]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("connections")
    voices, _ = make_voices(root)
    args = ["--voices", str(voices), "sample.steps=2", "--host", "127.0.0.1", "--header-timeout", str(HEADER_TIMEOUT),
            "--body-timeout", str(BODY_TIMEOUT), "--send-timeout", str(SEND_TIMEOUT), "--allow-host", ALLOWED]  # fmt: skip
    with server_process(root, *args) as running:
        yield running


def connect(url: str, sent: bytes = b"") -> socket.socket:
    """A raw connection to the server that has sent `sent` (half a request, say) and nothing more."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)))
    connection.sendall(sent)
    return connection


def read_until_closed(connection: socket.socket, deadline: float) -> tuple[bytes, bool]:
    """Everything the server sends until it closes the connection or `deadline` (monotonic) passes; and whether
    it closed."""
    got = b""
    while (left := deadline - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            data = connection.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return got, True
        if not data:
            return got, True
        got += data
    return got, False


def speech(text: str) -> dict[str, str]:
    return {"model": "tts-1", "voice": "us_male", "input": text, "response_format": "pcm"}


def test_a_request_head_sent_in_part_or_trickled_is_closed_at_its_deadline(served: Served) -> None:
    url = served[0]
    kept = connect(url, b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answer, closed = read_until_closed(kept, time.monotonic() + 1.0)  # answered; the connection stays open
    assert answer.startswith(b"HTTP/1.1 200") and not closed
    started = time.monotonic()
    kept.sendall(b"GET /v1/voices HTTP/1.1\r\n")  # ...half of the next request's head
    silent = [connect(url) for _ in range(10)]  # connected, and not a byte
    halves = [connect(url, b"GET /v1/voices HTTP/1.1\r\nHost: localhost\r\nX-Slow: ") for _ in range(10)]
    trickled = connect(url, b"G")
    stop = threading.Event()

    def trickle() -> None:  # a byte every half second: each within any per-read timeout
        while not stop.wait(0.5):
            try:
                trickled.sendall(b"E")
            except OSError:
                return  # closed by the server

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        for connection in [kept, *silent, *halves, trickled]:
            _, closed = read_until_closed(connection, started + HEADER_TIMEOUT + MARGIN)
            assert closed, f"a connection without a whole request head was still open after {MARGIN:g} s more"
        # Not at once either: it is the deadline that closes them (timers never fire early).
        assert time.monotonic() - started >= HEADER_TIMEOUT
    finally:
        stop.set()
        sender.join()
        for connection in [kept, *silent, *halves, trickled]:
            connection.close()


def test_a_body_trickled_a_byte_a_second_is_cut_at_its_whole_body_deadline(served: Served) -> None:
    url = served[0]
    body = b'{"model": "tts-1", "voice": "us_male", "input": "' + b"a" * 60 + b'"}'
    head = b"POST /v1/audio/speech HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    connection = connect(url, head + b"Content-Length: %d\r\n\r\n" % len(body))
    started, answer, closed = time.monotonic(), b"", False
    try:
        for byte in body:  # 78 bytes, a second each: every one well within --send-timeout
            if select.select([connection], [], [], 1.0)[0]:  # answered: stop sending, read it
                answer, closed = read_until_closed(connection, time.monotonic() + MARGIN)
                break
            assert time.monotonic() - started < BODY_TIMEOUT + MARGIN, "the trickled body was never cut"
            connection.sendall(bytes([byte]))
        took = time.monotonic() - started
    finally:
        connection.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"code":"body_timeout"' in answer and b"4 s in all (--body-timeout)" in answer
    assert closed, "the connection stays open for the rest of the body"
    assert BODY_TIMEOUT <= took < BODY_TIMEOUT + MARGIN


def test_only_a_host_this_server_answers_to_is_served(served: Served) -> None:
    url = served[0]
    port = url.rsplit(":", 1)[1]
    # What a browser sends from a page whose name was rebound to this machine's address: its own name.
    for host in ["evil.example", "evil.example:8000", "localhost.evil.example", f"{ALLOWED}.evil"]:
        header = {"Host": host}
        answers = [
            httpx.get(f"{url}/v1/voices", headers=header),
            httpx.post(f"{url}/v1/audio/speech", json=speech("Hello."), headers=header),
            httpx.get(f"{url}/health", headers=header),
        ]
        for answer in answers:
            assert answer.status_code == 400, (host, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "host_not_allowed" and error["type"] == "invalid_request_error"
            assert f"does not answer to host {host!r}" in error["message"] and "--allow-host" in error["message"]
    # localhost, IP addresses (--host's 127.0.0.1 among them: an address cannot be rebound), --allow-host's name
    for host in ["localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "192.0.2.7", "TTS.Example",
                 f"{ALLOWED}:443"]:  # fmt: skip
        answer = httpx.get(f"{url}/v1/voices", headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)
    answer = httpx.post(f"{url}/v1/audio/speech", json=speech("Hello."), headers={"Host": ALLOWED}, timeout=60)
    assert answer.status_code == 200 and answer.content


def test_the_host_flag_is_a_name_requests_may_give() -> None:
    args = _parser().parse_args(["model=m", "--host", "tts-box.lan", "--allow-host", ALLOWED])
    settings = _settings(args, compose_serve_config(args.settings))
    assert settings.allowed_hosts == ("tts-box.lan", ALLOWED)
    with pytest.raises(ValueError, match="bare name such as tts.example"):
        args = _parser().parse_args(["model=m", "--allow-host", "https://tts.example"])
        _settings(args, compose_serve_config(args.settings))


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def test_more_idle_connections_than_files_leave_room_for_requests_and_log_no_flood(tmp_path: Path) -> None:
    voices, _ = make_voices(tmp_path)
    # A minute's deadline: only the cap, not the deadline, can make room within this test.
    args = ["--voices", str(voices), "sample.steps=2", "--header-timeout", "60"]
    with server_process(tmp_path, *args, open_files=128) as (url, process):
        idle = [connect(url, b"GET /v1/voices HTTP/1.1\r\nHost: localhost\r\nX-Slow: ") for _ in range(100)]
        idle += [connect(url) for _ in range(100)]  # 200 in all, more than 128 files could hold
        try:
            time.sleep(1.0)  # the server takes what it takes of them
            for _ in range(3):
                answer = httpx.get(f"{url}/v1/voices", timeout=30)  # a new connection each time
                assert answer.status_code in (200, 503), answer.text
                if answer.status_code == 503:  # refused cleanly, in OpenAI's shape
                    assert answer.json()["error"]["message"]
            answer = httpx.post(f"{url}/v1/audio/speech", json=speech("Hello."), timeout=60)
            assert answer.status_code == 200 and answer.content
            assert open_files(process.pid) < 128
        finally:
            for connection in idle:
                connection.close()
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200
        log = server_log(tmp_path, url)
    assert "Traceback" not in log and "Too many open files" not in log, log[-2000:]
    assert len(log.splitlines()) < 20, log[-2000:]
    assert "connections open (--max-connections)" in log  # one line says what happened

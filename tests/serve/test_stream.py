"""How a speech response ends when something goes wrong, on a real uvicorn server in this process (a thread) whose
model thread is told to fail or to stall a chosen batch: before the first audio, OpenAI's error status (500, 504);
after it, an `error` event for server-sent events and a dropped connection for audio (never a short body that looks
whole); a request out of time is cut; its place is given back every time. And `plan`: every piece within the model's
window, its length in samples the length made."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("fastapi")
pytest.importorskip("av")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from support.infer_assets import make_model_files  # noqa: E402
from support.serve_assets import free_port, make_voices  # noqa: E402

from f5lite.audio import samples_for_frames  # noqa: E402
from f5lite.infer import Synthesizer  # noqa: E402
from f5lite.infer.duration import DurationEstimator  # noqa: E402
from f5lite.infer.plan import Piece  # noqa: E402
from f5lite.sampling import SamplerOptions  # noqa: E402
from f5lite.serve.app import create_app  # noqa: E402
from f5lite.serve.engine import Engine, Task  # noqa: E402
from f5lite.serve.settings import WINDOW_FRAMES, ServeSettings  # noqa: E402
from f5lite.serve.speech import plan_request  # noqa: E402
from f5lite.serve.voices import VoiceStore  # noqa: E402

TEXT = " ".join(["The kettle started to whistle just as the phone rang."] * 4)  # a short first piece, then more


class ScriptedEngine(Engine):
    """The model's thread, doing to its n-th batch what `script[n]` says: "fail", or wait that many seconds first."""

    def __init__(self, synthesizer: Synthesizer, script: dict[int, str | float]) -> None:
        super().__init__(synthesizer, max_batch=4, max_batch_frames=8192, max_wait=0.0)
        self.script, self.batches = script, 0

    def _run(self, batch: list[Task]) -> list[torch.Tensor]:
        what, self.batches = self.script.get(self.batches), self.batches + 1
        if what == "fail":
            raise RuntimeError("a planted failure")
        if isinstance(what, float):
            time.sleep(what)
        return super()._run(batch)


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Synthesizer, VoiceStore]:
    root = tmp_path_factory.mktemp("stream")
    export, _ = make_model_files(root)
    synthesizer = Synthesizer.from_pretrained(export, "griffin_lim", dtype="fp32", compile=False, duration="rule")
    return synthesizer, VoiceStore(make_voices(root)[0], synthesizer.reference, 15.0)


@contextmanager
def serving(parts, script: dict[int, str | float], **settings: Any) -> Iterator[str]:
    synthesizer, voices = parts
    engine = ScriptedEngine(synthesizer, script)
    settings = ServeSettings(model_id="m", options=SamplerOptions(steps=2), **settings)
    config = uvicorn.Config(create_app(engine, voices, settings), port=free_port(), log_level="critical",
                            lifespan="off", timeout_graceful_shutdown=1)  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join()
        engine.stop()


def body(fmt: str = "pcm", stream_format: str = "audio") -> dict[str, str]:
    return {"model": "m", "voice": "us_male", "input": TEXT, "response_format": fmt, "stream_format": stream_format}


def queue_depth(url: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return float(re.search(r"^f5lite_queue_depth (\S+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]


def test_a_failure_before_the_first_audio_is_a_500_in_openais_shape(parts) -> None:
    with serving(parts, {0: "fail"}) as url:
        response = httpx.post(f"{url}/v1/audio/speech", json=body(), timeout=60)
        assert response.status_code == 500
        assert response.json()["error"] == {"message": "speech failed: the server's log has the details",
                                            "type": "server_error", "param": None, "code": None}  # fmt: skip
        assert queue_depth(url) == 0
        assert httpx.post(f"{url}/v1/audio/speech", json=body(), timeout=60).status_code == 200  # the thread goes on


def test_a_request_out_of_time_before_its_first_audio_is_a_504(parts) -> None:
    with serving(parts, {0: 2.0}, request_timeout=1.0) as url:
        started = time.monotonic()
        response = httpx.post(f"{url}/v1/audio/speech", json=body(), timeout=60)
        assert response.status_code == 504 and "ran past its 1 s" in response.json()["error"]["message"]
        assert time.monotonic() - started < 2.5 and queue_depth(url) == 0


@pytest.mark.parametrize(("script", "words"), [({1: "fail"}, "speech failed"), ({1: 3.0}, "ran past its 2 s")])
def test_after_the_first_audio_sse_ends_with_an_error_event(parts, script, words) -> None:
    with serving(parts, script, request_timeout=2.0) as url:
        events = []
        with httpx.stream("POST", f"{url}/v1/audio/speech", json=body(stream_format="sse"), timeout=60) as response:
            assert response.status_code == 200
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
        assert events[0]["type"] == "speech.audio.delta" and events[-1]["type"] == "error"
        assert words in events[-1]["error"]["message"] and events[-1]["error"]["type"] == "server_error"
        assert not any(event["type"] == "speech.audio.done" for event in events)
        assert queue_depth(url) == 0


@pytest.mark.parametrize("script", [{1: "fail"}, {1: 3.0}], ids=["failure", "out-of-time"])
def test_after_the_first_audio_an_audio_stream_is_dropped_not_ended(parts, script) -> None:
    with serving(parts, script, request_timeout=2.0) as url:
        received = b""
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", f"{url}/v1/audio/speech", json=body(fmt="wav"), timeout=60) as response,
        ):
            for chunk in response.iter_bytes():
                received += chunk
        assert received.startswith(b"RIFF")  # the first audio came; the rest is missing, and the client knows
        assert queue_depth(url) == 0


def test_every_piece_fits_the_window_and_the_plan_is_the_length_made(parts) -> None:
    synthesizer, voices = parts
    voice = voices.get("us_male")
    engine = Engine(synthesizer, max_batch=4, max_batch_frames=8192, max_wait=0.0)
    engine.stop()  # planning only: no thread needed
    planned = plan_request(engine, voice, TEXT, 1.0, streaming=True)
    assert len(planned.pieces) == 2 and " ".join(piece.text for piece in planned.pieces) == TEXT
    with serving(parts, {}) as url:
        pcm = httpx.post(f"{url}/v1/audio/speech", json=body(), timeout=60).content
    assert len(pcm) // 2 == planned.samples()

    class TooLong(DurationEstimator):  # a predictor that asks for minutes of speech
        def total_frames(self, ref_frames: int, ref_text: str, gen_text: str, speed: float = 1.0) -> int:
            return 10**6

    synthesizer.duration, rule = TooLong(), synthesizer.duration
    try:
        capped = plan_request(engine, voice, TEXT, 1.0, streaming=False)
    finally:
        synthesizer.duration = rule
    assert [piece.frames for piece in capped.pieces] == [WINDOW_FRAMES] * len(capped.pieces)


def test_a_piece_waiting_in_the_queue_is_dropped_when_its_request_is_given_up(parts) -> None:
    synthesizer, voices = parts
    engine = ScriptedEngine(synthesizer, {0: 1.0})
    try:
        voice = voices.get("us_male")
        first = Task(
            Piece(voice, "Hello.", voice.mel.shape[0] + 40, samples_for_frames(40)),
            SamplerOptions(steps=2),
            threading.Event(),
        )
        second = Task(
            Piece(voice, "Hello.", voice.mel.shape[0] + 40, samples_for_frames(40)),
            SamplerOptions(steps=3),
            threading.Event(),
        )
        engine.submit(first)
        time.sleep(0.2)  # the first batch runs (and waits); the second piece queues behind it
        engine.submit(second)
        assert second.result.cancel()  # its request gave up (a deadline, a client gone) while it waited
        assert first.result.result(timeout=60).shape[0] > 0
        assert engine.batches == 1  # the given-up piece was never run, and the thread did not die of it
        third = Task(
            Piece(voice, "Hello.", voice.mel.shape[0] + 40, samples_for_frames(40)),
            SamplerOptions(steps=2),
            threading.Event(),
        )
        assert engine.submit(third).result(timeout=60).shape[0] > 0
    finally:
        engine.stop()


def test_the_checked_settings_hold_a_window_per_batch(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"max_batch_frames=1000 is not valid.*>= {WINDOW_FRAMES}"):
        ServeSettings(model_id="m", max_batch_frames=1000)


def test_a_page_of_an_allowed_origin_is_served_and_others_are_not(parts) -> None:
    with serving(parts, {}, allowed_origins=("https://reader.example",), api_key="k") as url:
        key = {"Authorization": "Bearer k"}
        mine = httpx.post(f"{url}/v1/audio/speech", json=body(), headers={**key, "Origin": "https://reader.example"})
        assert mine.status_code == 200
        other = httpx.post(
            f"{url}/v1/audio/speech", json=body(), headers={**key, "Origin": "https://reader.example.evil"}
        )
        assert other.status_code == 403
        assert (
            httpx.post(f"{url}/v1/audio/speech", json=body(), headers={"Authorization": "Bearer kk"}).status_code == 401
        )


def test_a_client_that_leaves_before_its_first_audio_frees_its_place_at_once(parts, caplog) -> None:
    with caplog.at_level("ERROR", logger="f5lite.serve"), serving(parts, {0: 2.0}) as url:
        host, port = url.removeprefix("http://").split(":")
        request = json.dumps(body()).encode()
        with socket.create_connection((host, int(port))) as gone:
            head = b"POST /v1/audio/speech HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            gone.sendall(head + b"Content-Length: %d\r\n\r\n" % len(request) + request)
            time.sleep(0.5)  # admitted, its first piece in the model (held 2 s)
            assert queue_depth(url) == 1
        deadline = time.monotonic() + 1.0  # well before the piece is made
        while queue_depth(url) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queue_depth(url) == 0
        assert (
            httpx.post(f"{url}/v1/audio/speech", json=body(), timeout=60).status_code == 200
        )  # and the server goes on
    assert not caplog.records, caplog.text  # a client leaving is no failure of the server

"""`f5lite-serve` under load, as a real process: requests batched into one sampler call, a full queue answered with
429 and Retry-After, a long request not starving short ones, an abandoned stream cancelled, uploads off by default."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("av")

import httpx  # noqa: E402
import openai  # noqa: E402
from support.serve_assets import make_voices, server  # noqa: E402

SHORT = "Hello there, how are you?"
SENTENCES = [
    "The kettle started to whistle just as the phone rang.",
    "Please leave your muddy boots by the back door.",
    "We will meet again at the old oak tree tomorrow.",
]
LONG = " ".join(SENTENCES * 12)  # about 1,800 characters: six or more pieces


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("serve_load")
    voices, _ = make_voices(root)
    args = [
        "--voices",
        str(voices),
        "sample.steps=2",
        "--max-batch",
        "4",
        "--batch-wait-ms",
        "400",
        "--queue-size",
        "3",
    ]
    with server(root, *args) as base:
        yield base


def pieces_and_calls(url: str) -> tuple[float, float]:
    """Pieces run and sampler calls made so far (the batch-size histogram's sum and count)."""
    text = httpx.get(f"{url}/metrics").text
    total = float(re.search(r"^f5lite_batch_size_sum (\S+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    calls = float(re.search(r"^f5lite_batch_size_count (\S+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    return total, calls


def speak(url: str, text: str = SHORT) -> httpx.Response:
    body = {"model": "tts-1", "voice": "us_male", "input": text, "response_format": "pcm"}
    return httpx.post(f"{url}/v1/audio/speech", json=body, timeout=300)


def test_requests_that_arrive_together_share_a_sampler_call(url: str) -> None:
    pieces, calls = pieces_and_calls(url)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: client.audio.speech.create(model="tts-1", voice="us_male", input=SHORT,
                                                                      response_format="pcm").content, range(3)))  # fmt: skip
    assert all(len(audio) > 0 for audio in results)
    after_pieces, after_calls = pieces_and_calls(url)
    assert after_pieces - pieces == 3 and after_calls - calls < 3  # three pieces in fewer calls


def test_a_full_queue_is_answered_429_with_retry_after_not_a_hang(url: str) -> None:
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: speak(url, " ".join(SENTENCES)), range(8)))
    statuses = sorted(r.status_code for r in responses)
    assert 429 in statuses and 200 in statuses and set(statuses) == {200, 429}
    refused = next(r for r in responses if r.status_code == 429)
    assert refused.headers["retry-after"] == "1" and refused.json()["error"]["code"] == "queue_full"
    assert time.monotonic() - started < 120


def test_a_long_request_does_not_starve_a_short_one(url: str) -> None:
    finished: dict[str, float] = {}

    def run(name: str, text: str) -> None:
        assert speak(url, text).status_code == 200
        finished[name] = time.monotonic()

    long = threading.Thread(target=run, args=("long", LONG))
    long.start()
    time.sleep(1.0)  # the long request is under way
    run("short", SHORT)
    long.join()
    assert finished["short"] < finished["long"]


def test_a_client_that_goes_away_cancels_the_rest_of_its_request(url: str) -> None:
    before, _ = pieces_and_calls(url)
    body = {"model": "tts-1", "voice": "us_male", "input": LONG, "response_format": "pcm"}
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=300) as response:
        next(response.iter_bytes())  # the first audio, then the client leaves
    seen, still = pieces_and_calls(url)[0], 0.0
    while still < 2.0:  # until no piece has run for 2 s
        time.sleep(0.5)
        now = pieces_and_calls(url)[0]
        still = still + 0.5 if now == seen else 0.0
        seen = now
    assert seen - before <= 3  # of six or more: the first, and the one running or queued when it left
    depth = next(x for x in httpx.get(f"{url}/metrics").text.splitlines() if x.startswith("f5lite_queue_depth "))
    assert float(depth.split()[1]) == 0  # every request, finished, refused or abandoned, gave its place back


def test_voice_upload_is_off_unless_asked(url: str) -> None:
    response = httpx.post(f"{url}/v1/voices", data={"name": "x"}, files={"file": ("x.wav", b"RIFF")})
    assert response.status_code == 403 and "--voice-upload" in response.json()["error"]["message"]
    assert httpx.delete(f"{url}/v1/voices/us_male").status_code == 403
    assert [v["name"] for v in httpx.get(f"{url}/v1/voices").json()["voices"]] == [
        "caribbean_female",
        "us_female",
        "us_male",
    ]

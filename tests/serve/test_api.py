"""`f5lite-serve` as clients meet it: a real server process driven by the official `openai` SDK (and httpx for what
the SDK does not cover): every response format, streaming, server-sent events, speed, voices, keys and errors."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("av")

import httpx  # noqa: E402
import openai  # noqa: E402
import soundfile as sf  # noqa: E402
from support.serve_assets import KEY, make_voices, seconds_of, server  # noqa: E402

from f5lite.serve.encoding import FORMATS  # noqa: E402

SHORT = "Hello there, how are you?"  # one piece (under the 40-byte first piece of a stream)
LONG = "The kettle started to whistle. Please leave your boots by the door. We will meet at the old oak tree."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("serve")
    voices, texts = make_voices(root)
    with server(
        root, "--voices", str(voices), "--api-key", KEY, "--voice-upload", "sample.steps=4", "sample.seed=5"
    ) as url:
        yield url, voices, texts


@pytest.fixture(scope="module")
def client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served[0]}/v1", api_key=KEY, max_retries=0)


def pieces_run(url: str) -> float:
    """Pieces the server's model has spoken so far (the batch-size histogram's sum)."""
    line = next(x for x in httpx.get(f"{url}/metrics").text.splitlines() if x.startswith("f5lite_batch_size_sum "))
    return float(line.split()[1])


def expected_seconds(voices: Path, texts: dict[str, str], voice: str, text: str, speed: float = 1.0) -> float:
    """F5-TTS's byte-ratio rule: the reference's seconds per byte of its text, times the text's bytes, over speed."""
    ref_seconds = sf.info(voices / f"{voice}.ogg").duration
    return ref_seconds / len(f"{texts[voice]} ".encode()) * len(text.encode()) / speed


def test_every_response_format_decodes_to_the_expected_length(served, client: openai.OpenAI) -> None:
    _, voices, texts = served
    lengths = {}
    for fmt in FORMATS:
        response = client.audio.speech.create(model="tts-1", voice="us_male", input=SHORT, response_format=fmt)
        lengths[fmt] = seconds_of(response.content, fmt)
    assert lengths["pcm"] == pytest.approx(expected_seconds(voices, texts, "us_male", SHORT), abs=0.1)
    for fmt, seconds in lengths.items():  # the codecs pad by a frame or two at most
        assert seconds == pytest.approx(lengths["pcm"], abs=0.1), fmt
    samples = round(lengths["pcm"] * 24_000)
    for fmt in ("wav", "flac"):  # streamed, yet their headers carry the exact length: soundfile reads them
        data = client.audio.speech.create(model="tts-1", voice="us_male", input=LONG, response_format=fmt).content
        info = sf.info(io.BytesIO(data))
        wave, rate = sf.read(io.BytesIO(data))
        assert rate == 24_000 and wave.ndim == 1 and info.frames == wave.shape[0] == seconds_of(data, fmt) * 24_000
        pcm = client.audio.speech.create(model="tts-1", voice="us_male", input=LONG, response_format="pcm").content
        assert wave.shape[0] == len(pcm) // 2, fmt  # the planned length is the length made
    assert samples > 0


def test_speed_changes_the_length(served, client: openai.OpenAI) -> None:
    def seconds(speed: float) -> float:
        response = client.audio.speech.create(
            model="tts-1", voice="us_female", input=SHORT, response_format="pcm", speed=speed
        )
        return seconds_of(response.content, "pcm")

    normal, fast, slow = seconds(1.0), seconds(2.0), seconds(0.5)
    assert fast == pytest.approx(normal / 2, rel=0.1) and slow == pytest.approx(normal * 2, rel=0.1)


def test_the_server_s_seed_makes_a_request_sound_the_same_every_time(client: openai.OpenAI) -> None:
    """`seed=5` (`sample.seed`, as `f5lite-infer` spells it) seeds every request's noise; without it each draws."""
    said = [
        client.audio.speech.create(model="tts-1", voice="us_male", input=SHORT, response_format="pcm").content
        for _ in range(2)
    ]
    assert said[0] == said[1] and len(said[0]) > 0


def test_a_streamed_response_arrives_in_pieces_and_decodes(served, client: openai.OpenAI) -> None:
    _, voices, texts = served
    expected = expected_seconds(voices, texts, "us_male", LONG)
    for fmt in ("pcm", "mp3"):
        before = pieces_run(served[0])
        with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="us_male", input=LONG, response_format=fmt
        ) as response:
            chunks = list(response.iter_bytes())
        assert len(chunks) > 1, fmt
        # LONG fits in one chunk of the model's window; a stream starts with a short first piece all the same.
        assert pieces_run(served[0]) - before == 2
        # Each junction of pieces overlaps by the 0.15 s cross-fade; the rule rounds each piece's frames.
        assert seconds_of(b"".join(chunks), fmt) == pytest.approx(expected, abs=0.8)


def test_server_sent_events_carry_the_audio_then_done(client: openai.OpenAI) -> None:
    events = []
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="us_female", input=LONG, response_format="pcm", stream_format="sse"
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert len(deltas) > 1 and events[-1]["type"] == "speech.audio.done"
    assert events[-1]["usage"]["input_tokens"] == len(LONG)
    audio = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    assert seconds_of(audio, "pcm") > 2.0


@pytest.mark.parametrize(
    ("change", "error", "status", "words"),
    [
        ({"voice": "nobody"}, openai.NotFoundError, 404, "unknown voice 'nobody'; voices: caribbean_female"),
        ({"model": "gpt-9"}, openai.NotFoundError, 404, "unknown model 'gpt-9'"),
        ({"speed": 5.0}, openai.BadRequestError, 400, "speed 5.0 is not in [0.25, 4.0]"),
        ({"response_format": "ogg"}, openai.BadRequestError, 400, "response_format 'ogg' is not one of mp3"),
        ({"input": "   "}, openai.BadRequestError, 400, "input is empty"),
        ({"input": "a" * 4097}, openai.UnprocessableEntityError, 422, "input has 4097 characters; the most is 4096"),
    ],
)
def test_bad_requests_get_openais_error_shape_and_status(client, change, error, status, words) -> None:
    request = {"model": "tts-1", "voice": "us_male", "input": SHORT, **change}
    with pytest.raises(error) as caught:
        client.audio.speech.create(**request)
    assert caught.value.status_code == status
    body = caught.value.response.json()["error"]
    assert words in body["message"] and set(body) == {"message", "type", "param", "code"}


def test_bad_json_is_named_and_there_are_no_open_api_pages(served) -> None:
    url, auth = served[0], {"Authorization": f"Bearer {KEY}"}
    json_type = {**auth, "content-type": "application/json"}
    bad = httpx.post(f"{url}/v1/audio/speech", content=b'{"model": "tts-1", "input": ', headers=json_type)
    assert bad.status_code == 400 and bad.json()["error"]["param"] is None  # not a byte offset
    assert bad.json()["error"]["message"].startswith("the body is not valid JSON")
    # A web form's plain-text post (what a page can send without asking) is not read as JSON.
    plain = httpx.post(
        f"{url}/v1/audio/speech", content=b'{"model": "tts-1"}', headers={**auth, "content-type": "text/plain"}
    )
    assert plain.status_code == 400 and "sent as Content-Type: application/json" in plain.json()["error"]["message"]
    assert (
        httpx.get(f"{url}/openapi.json").status_code == 401
        and httpx.get(f"{url}/openapi.json", headers=auth).is_success
    )
    assert httpx.get(f"{url}/docs").status_code == 404 and httpx.get(f"{url}/redoc").status_code == 404


def test_a_missing_or_wrong_key_is_refused_but_health_needs_none(served) -> None:
    url = served[0]
    wrong = openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.audio.speech.create(model="tts-1", voice="us_male", input=SHORT)
    assert httpx.get(f"{url}/v1/voices").status_code == 401
    assert httpx.get(f"{url}/health").json()["status"] == "ready"


def test_a_second_server_on_a_taken_port_stops_at_once_in_one_line(served) -> None:
    port = served[0].rsplit(":", 1)[1]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "f5lite.serve", "model=no-such-model", "--port", port],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and time.monotonic() - started < 30
    assert done.stderr.strip().splitlines()[-1] == (
        f"f5lite-serve: error: cannot listen on 127.0.0.1:{port}: Address already in use (another server there?)"
    )


def test_models_voices_and_a_transcribed_voice(served, client: openai.OpenAI) -> None:
    url, voices, _ = served
    assert {"export", "tts-1"} <= {m.id for m in client.models.list()}
    listed = httpx.get(f"{url}/v1/voices", headers={"Authorization": f"Bearer {KEY}"}).json()["voices"]
    assert [v["name"] for v in listed] == ["caribbean_female", "us_female", "us_male"]
    # caribbean_female came without a transcript: the offline recogniser's is cached beside the clip.
    cached = (voices / "caribbean_female.txt").read_text().strip()
    assert cached and next(v for v in listed if v["name"] == "caribbean_female")["text"].startswith(cached)


def test_voices_are_added_used_and_deleted_over_http(served, client: openai.OpenAI) -> None:
    url, voices, _ = served
    auth = {"Authorization": f"Bearer {KEY}"}
    clip = (voices / "us_male.ogg").read_bytes()
    added = httpx.post(f"{url}/v1/voices", headers=auth, data={"name": "narrator", "text": "Some call me nature."},
                       files={"file": ("n.ogg", clip)})  # fmt: skip
    assert added.status_code == 200, added.text
    uploaded = voices / "uploaded"  # apart from the operator's clips, which HTTP never deletes
    assert (uploaded / "narrator.wav").is_file() and (uploaded / "narrator.txt").read_text() == "Some call me nature.\n"
    speech = client.audio.speech.create(model="tts-1", voice="narrator", input=SHORT, response_format="pcm")
    assert seconds_of(speech.content, "pcm") > 0.5
    again = httpx.post(f"{url}/v1/voices", headers=auth, data={"name": "narrator"}, files={"file": ("n.ogg", clip)})
    assert again.status_code == 409
    for name in ("../x", "a/b", ".hidden", "x" * 65):  # no name reaches outside the folder
        bad = httpx.post(f"{url}/v1/voices", headers=auth, data={"name": name}, files={"file": ("n.ogg", clip)})
        assert bad.status_code == 400 and "is not valid" in bad.json()["error"]["message"], (name, bad.text)
    assert not (voices.parent / "x.wav").exists()
    assert httpx.post(f"{url}/v1/voices", headers=auth, data={"name": "noise"},
                      files={"file": ("n.wav", b"RIFF0000WAVE")}).status_code == 400  # fmt: skip
    short = io.BytesIO()
    sf.write(short, [0.1] * 12_000, 24_000, format="WAV")  # half a second
    refused = httpx.post(f"{url}/v1/voices", headers=auth, data={"name": "brief", "text": "Hi."},
                         files={"file": ("b.wav", short.getvalue())})  # fmt: skip
    assert refused.status_code == 400 and "a reference must be 1 to 15 s long" in refused.json()["error"]["message"]
    assert not list(voices.rglob("brief.*"))  # nothing left behind
    big = httpx.post(f"{url}/v1/voices", headers=auth, data={"name": "big"},
                     files={"file": ("b.wav", b"0" * (11 * 2**20))})  # fmt: skip
    assert big.status_code == 413
    assert httpx.delete(f"{url}/v1/voices/narrator", headers=auth).json() == {"deleted": "narrator"}
    assert not (uploaded / "narrator.wav").exists() and not (uploaded / "narrator.txt").exists()
    assert httpx.delete(f"{url}/v1/voices/narrator", headers=auth).status_code == 404
    own = httpx.delete(f"{url}/v1/voices/us_male", headers=auth)  # the operator's voice: kept
    assert own.status_code == 403 and "only voices added over HTTP" in own.json()["error"]["message"]
    assert (voices / "us_male.ogg").is_file() and (voices / "us_male.txt").is_file()
    with pytest.raises(openai.NotFoundError):
        client.audio.speech.create(model="tts-1", voice="narrator", input=SHORT)


def test_metrics_count_requests_latency_and_batches(served, client: openai.OpenAI) -> None:
    client.audio.speech.create(model="tts-1", voice="us_male", input=SHORT, response_format="pcm")
    text = httpx.get(f"{served[0]}/metrics").text
    for name in ("f5lite_requests_total", "f5lite_request_seconds_bucket", "f5lite_time_to_first_audio_seconds_count",
                 "f5lite_real_time_factor_count", "f5lite_queue_depth", "f5lite_batch_size_count"):  # fmt: skip
        assert name in text
    assert 'f5lite_requests_total{endpoint="/v1/audio/speech",status="200"}' in text
    # Labelled by route, not by URL: the voices deleted above are one label, whatever their names.
    assert 'endpoint="/v1/voices/{name}"' in text and "narrator" not in text

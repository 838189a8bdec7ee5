"""`f5lite-serve`, as a real process and a real client: no request is spoken in a piece over the model's 22-second
window, whatever lifts its frames (spaces in an uploaded transcript, `speed`, phonemes that outnumber letters), and
texts that phonemizer answers in several lines are spoken.

Each piece of a response comes as one `speech.audio.delta` event of a server-sent-events stream, less the cross-fade
it holds back for the next (`f5lite.infer.crossfade.StreamJoin`): so no event may carry more than one window of
audio.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402
from support.infer_assets import VOCAB_FILE  # noqa: E402
from support.serve_assets import make_voices, server_process  # noqa: E402

import f5lite  # noqa: E402
from f5lite.config import compose_config  # noqa: E402
from f5lite.infer.chunking import MAX_SECONDS  # noqa: E402
from f5lite.models import build_backbone_from_config  # noqa: E402
from f5lite.paths import demo_dir  # noqa: E402

WORDS = "The kettle started to whistle just as the phone rang, and nobody answered it. "
WINDOW_SAMPLES = int(MAX_SECONDS * 24_000)
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the ipa tokenizer needs espeak-ng")


def serve(root: Path, tokenizer: str) -> Iterator[tuple[str, Path]]:
    """The tiny DiT (random weights) exported with `tokenizer`, served with the demo voices and uploads."""
    cfg = compose_config(["+recipe=debug_tiny"]).model
    torch.manual_seed(0)
    model = build_backbone_from_config(cfg, 40).eval()
    for param in model.parameters():
        torch.nn.init.normal_(param, std=0.1)
    f5lite.save_pretrained(root / "export", model, cfg, f5lite.load_vocab(VOCAB_FILE), tokenizer=tokenizer)
    voices, _ = make_voices(root)
    shutil.copy(voices / "us_male.ogg", voices / "spaced.ogg")  # an operator's voice, its transcript full of spaces
    (voices / "spaced.txt").write_text("The kettle" + " " * 12_000 + "started to whistle.\n")
    args = ["--voices", str(voices), "--voice-upload", "sample.steps=2", "--request-timeout", "120"]
    with server_process(root, *args) as (url, _):
        yield url, voices


@pytest.fixture(scope="module")
def chars(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    yield from serve(tmp_path_factory.mktemp("bounds-char"), "char")


@pytest.fixture(scope="module")
def phonemes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("the ipa tokenizer needs espeak-ng")
    yield from serve(tmp_path_factory.mktemp("bounds-ipa"), "ipa")


def clip(seconds: float) -> bytes:
    """`seconds` of a demo recording (said again as often as it takes), as a WAV upload."""
    wave, rate = sf.read(demo_dir() / "audio" / "us_male" / "000_us_male.ogg", dtype="float32")
    out = io.BytesIO()
    sf.write(out, np.resize(wave, round(seconds * rate)), rate, format="WAV")
    return out.getvalue()


def upload(url: str, name: str, seconds: float, text: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/voices",
        data={"name": name, "text": text},
        files={"file": (f"{name}.wav", clip(seconds))},
        timeout=60,
    )


def pieces(url: str, voice: str, text: str, speed: float = 1.0) -> list[int]:
    """The samples of each piece of a streamed response (its `speech.audio.delta` events, in 16-bit PCM)."""
    body = {"model": "tts-1", "voice": voice, "input": text, "response_format": "pcm", "speed": speed,
            "stream_format": "sse"}  # fmt: skip
    sizes, done = [], False
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=120) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                assert event["type"] != "error", event
                if event["type"] == "speech.audio.delta":
                    sizes.append(len(base64.b64decode(event["audio"])) // 2)
                done = done or event["type"] == "speech.audio.done"
    assert done and sizes
    return sizes


def test_spaces_in_an_uploaded_transcript_do_not_lift_the_voices_pieces(chars) -> None:
    url, voices = chars
    answer = upload(url, "spacey", 1.0, "Hi" + " " * 12_000 + "there.")
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Hi there."
    assert (voices / "uploaded" / "spacey.txt").read_text() == "Hi there.\n"  # kept, and loaded again, collapsed
    # A frame per space made every piece of this voice 12,041 frames (over two minutes): now a word's worth.
    assert max(pieces(url, "spacey", "Hello there.")) < 5 * 24_000


def test_spaces_in_a_voices_folder_transcript_do_not_lift_its_pieces(chars) -> None:
    url, _ = chars
    spaced = next(v for v in httpx.get(f"{url}/v1/voices").json()["voices"] if v["name"] == "spaced")
    assert spaced["text"] == "The kettle started to whistle."
    assert max(pieces(url, "spaced", "Hello there.")) < 5 * 24_000


def test_a_transcript_with_more_characters_than_its_clip_says_counting_spaces_is_refused(chars) -> None:
    # 18 letters in a second pass; with their spaces (and the full stop the model is given) 37 do not.
    answer = upload(url := chars[0], "airy", 1.0, "a " * 17 + "b")
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "text", answer.text
    assert "37 characters for 1.0 s" in answer.json()["error"]["message"]
    assert httpx.get(f"{url}/v1/voices").json()["voices"][-1]["name"] != "airy"


def test_speed_does_not_lift_a_piece_over_the_window(chars) -> None:
    # A voice as fast as anyone speaks, at speed 4: a piece's bytes at four times its rate are more characters, a
    # frame each, than the window holds.
    url, _ = chars
    assert upload(url, "fast", 3.0, (WORDS * 3)[:99].strip()).status_code == 200
    sizes = pieces(url, "fast", (WORDS * 40)[:3000], speed=4.0)
    assert max(sizes) <= WINDOW_SAMPLES, max(sizes) / 24_000


@needs_espeak
def test_phonemes_that_outnumber_letters_do_not_lift_a_piece_over_the_window(phonemes) -> None:
    url, _ = phonemes
    sizes = pieces(url, "us_male", "www." * 256, speed=4.0)  # some 33 phonemes for each 4 letters
    assert max(sizes) <= WINDOW_SAMPLES, max(sizes) / 24_000


@needs_espeak
def test_a_text_phonemizer_answers_in_two_lines_is_spoken(phonemes) -> None:
    url, _ = phonemes
    for text in ("1.1.", "Version 1.1. is out, 2.2. is next."):
        assert pieces(url, "us_male", text)


def test_half_a_character_in_the_input_is_refused_in_one_line(chars) -> None:
    body = '{"model": "tts-1", "voice": "us_male", "input": "Hello \\ud800 there.", "response_format": "pcm"}'
    answer = httpx.post(f"{chars[0]}/v1/audio/speech", content=body, headers={"content-type": "application/json"})
    error = answer.json()["error"]
    assert answer.status_code == 400 and error["param"] == "input" and "lone UTF-16 surrogate" in error["message"]

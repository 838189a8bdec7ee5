"""`f5lite-serve` of a distilled student, as clients meet it: started with no sampler flags, it speaks with the
student's own steps. The student says what it was distilled for (4 steps); sampling it otherwise (the server's usual
32 steps) makes the sampler warn in the server's log, so a clean log after a request is the observable."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("av")

import openai  # noqa: E402
from support.infer_assets import make_model_files  # noqa: E402
from support.serve_assets import make_voices, seconds_of, server  # noqa: E402

from f5lite.models.distill import StudentBackbone  # noqa: E402
from f5lite.storage.pretrained import load_pretrained, save_pretrained  # noqa: E402


def test_a_served_student_speaks_with_its_own_steps_without_flags(tmp_path: Path) -> None:
    teacher, _ = make_model_files(tmp_path / "teacher")
    backbone, info = load_pretrained(teacher)
    student = StudentBackbone(copy.deepcopy(backbone), {"steps": 4}, {"steps": [4], "guidance": [1.0, 3.0]})
    save_pretrained(tmp_path / "export", student, info.model, info.vocab, tokenizer=info.tokenizer)
    voices, _ = make_voices(tmp_path)
    with server(tmp_path, "--voices", str(voices)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        audio = client.audio.speech.create(model="tts-1", voice="us_male", input="Hello there.", response_format="wav")
        assert seconds_of(audio.content, "wav") > 0.3
    log = "\n".join(p.read_text() for p in tmp_path.glob("server-*.log"))
    assert "serving" in log and "outside what it learned" not in log, log[-2000:]

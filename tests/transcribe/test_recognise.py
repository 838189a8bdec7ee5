"""Transcripts of clips (`f5lite.transcribe.recognise`, `Recognizer.hear`): batches, confidences, training text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import soundfile as sf
import torch
from support.tiny_models import save_tiny_whisper
from torch import Tensor

from f5lite.metrics.asr import Heard, load_recognizer
from f5lite.paths import demo_dir
from f5lite.transcribe.recognise import normalise_transcript, recognise


def demo_clip(speaker: str, index: int) -> Tensor:
    path = sorted((demo_dir() / "audio" / speaker).iterdir())[index]
    return torch.from_numpy(sf.read(path, dtype="float32")[0])


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("  Hello,\n  world.  ", "Hello, world."),
        ("欢 迎 大 家", "欢迎大家"),  # FunASR's spaced characters
        ("I like 北 京 a lot", "I like 北京 a lot"),  # spaces kept between words, dropped between characters
        ("Cafe\u0301", "Caf\u00e9"),  # one code point per accented letter, as a vocabulary holds it
    ],
)
def test_training_text_is_what_tokenizers_expect(raw: str, text: str) -> None:
    assert normalise_transcript(raw) == text


class Recorder:
    """A recogniser that hears a clip's length, and records the batches it was handed."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def transcribe(self, audio: Tensor, sample_rate: int) -> str:
        return self.hear([audio], sample_rate)[0].text

    def hear(self, clips: Sequence[Tensor], sample_rate: int) -> list[Heard]:
        self.batches.append(len(clips))
        return [Heard(f" {len(clip)}  samples ", 0.5) for clip in clips]


def test_clips_are_heard_in_batches_in_order() -> None:
    recorder = Recorder()
    heard = recognise(recorder, [torch.zeros(n) for n in range(1, 11)], 16_000, batch_size=4)
    assert recorder.batches == [4, 4, 2]
    assert [h.text for h in heard] == [f"{n} samples" for n in range(1, 11)]


def test_pocketsphinx_hears_each_clip_as_if_it_were_the_first() -> None:
    pytest.importorskip("pocketsphinx")
    recognizer = load_recognizer("pocketsphinx")
    clip = demo_clip("scottish_male", 1)
    alone = recognizer.hear([clip], 24_000)[0]
    for speaker in ("us_male", "gb_female", "caribbean_female"):  # whatever it decoded before
        recognizer.transcribe(demo_clip(speaker, 2), 24_000)
    assert recognizer.hear([clip], 24_000)[0] == alone
    assert alone.text and alone.confidence is not None and 0.0 < alone.confidence <= 1.0


@pytest.mark.slow  # builds a tiny Whisper through transformers (about 10 s); `make test-slow`
def test_whisper_hears_a_batch_in_one_call_as_it_hears_each_clip(tmp_path: Path) -> None:
    save_tiny_whisper(tmp_path, multilingual=False)
    recognizer = load_recognizer(f"whisper:{tmp_path}")
    clips = [demo_clip("us_male", 0), demo_clip("gb_female", 1)[:24_000]]
    batch = recognizer.hear(clips, 24_000)
    assert [h.text for h in batch] == [recognizer.transcribe(clip, 24_000) for clip in clips]
    assert all(h.confidence is not None and 0.0 < h.confidence <= 1.0 for h in batch)

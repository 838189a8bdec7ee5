"""Inference text handling (reference transcript, chunks sized from the speaking rate), durations and cross-fades."""

from __future__ import annotations

import pytest
import torch

from f5lite.infer import chunk_text, crossfade, max_chunk_bytes, prepare_ref_text
from f5lite.sampling import estimate_duration


@pytest.mark.parametrize(
    ("given", "prepared"),
    [
        ("Some call me nature", "Some call me nature. "),
        ("Some call me nature.", "Some call me nature. "),
        ("  Really?  ", "Really? "),
        ("Wow!", "Wow! "),
        ("对，这就是我。", "对，这就是我。"),
        ("对，这就是我", "对，这就是我。"),
    ],
)
def test_reference_transcript_ends_like_a_sentence(given, prepared):
    assert prepare_ref_text(given) == prepared


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_empty_reference_transcript_explains_that_there_is_no_asr(blank):
    with pytest.raises(ValueError, match="ref_text is empty.*ASR"):
        prepare_ref_text(blank)


def test_chunk_budget_follows_the_reference_speaking_rate():
    # 20 bytes in 2 s = 10 bytes/s; 20 s left in F5-TTS's 22 s budget.
    assert max_chunk_bytes("x" * 20, 2.0) == 200
    assert max_chunk_bytes("x" * 20, 2.0, speed=1.5) == 300
    assert max_chunk_bytes("x", 21.9) == 1
    with pytest.raises(ValueError, match="reference audio is 22.0 s long"):
        max_chunk_bytes("x" * 20, 22.0)


def test_short_text_is_one_chunk_with_whitespace_normalized():
    assert chunk_text("Hello there.\n  How are you?", 100) == ["Hello there. How are you?"]
    assert chunk_text("   ", 100) == []


def test_sentences_are_packed_greedily_within_the_budget():
    text = "One two three. Four five! Six seven eight nine? Ten."
    chunks = chunk_text(text, 30)
    assert chunks == ["One two three. Four five!", "Six seven eight nine? Ten."]
    assert " ".join(chunks) == text
    assert all(len(c.encode()) <= 30 for c in chunks)


def test_a_long_sentence_is_cut_at_clauses_then_words():
    text = "alpha beta gamma, delta epsilon zeta, eta theta iota kappa lambda mu."
    chunks = chunk_text(text, 25)
    assert chunks[0] == "alpha beta gamma,"
    assert all(len(c.encode()) <= 25 for c in chunks)
    assert " ".join(chunks) == text
    assert chunk_text("Supercalifragilistic word", 5) == ["Super", "calif", "ragil", "istic", "word"]


@pytest.mark.parametrize(
    "text",
    [
        "x" * 4000,  # one 4,000-character word
        "https://example.com/" + "a1b2c3/" * 300,  # a URL
        "今天天气很好我们去公园吧" * 300,  # CJK without punctuation: one word of 3,600 characters
        "Go to " + "QUJD" * 500 + "= now.",  # base64 inside a sentence
    ],
)
def test_no_chunk_is_longer_than_the_budget_however_long_a_word(text):
    chunks = chunk_text(text, 100)
    assert chunks and all(len(c.encode()) <= 100 for c in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")  # every character kept, in order
    assert chunk_text("é" * 3, 1) == ["é", "é", "é"]  # never inside a character, even under one character's bytes


def test_a_reference_transcript_too_long_for_its_clip_is_refused():
    assert max_chunk_bytes("x" * 70, 2.0) > 0  # 35 characters per second: a fast speaker
    with pytest.raises(ValueError, match="4000 characters for 2.0 s of audio .2000 per second; at most 35"):
        max_chunk_bytes("x" * 4000, 2.0)


def test_decimal_points_do_not_end_sentences():
    assert chunk_text("Pi is 3.14 roughly. Yes.", 20) == ["Pi is 3.14 roughly.", "Yes."]


def test_cjk_text_is_cut_after_cjk_punctuation_without_spaces():
    text = "今天天气很好。我们去公园吧！好的。"
    chunks = chunk_text(text, 24)  # 8 characters of 3 bytes
    assert chunks == ["今天天气很好。", "我们去公园吧！", "好的。"]
    assert "".join(chunks) == text


def test_duration_is_the_byte_ratio_rule():
    # 100 reference frames for 10 bytes: 10 frames per byte.
    assert estimate_duration(100, "x" * 10, "y" * 7) == 170
    assert estimate_duration(100, "x" * 10, "y" * 7, speed=2.0) == 135
    assert estimate_duration(100, "x" * 10, "é") == 120  # bytes, not characters
    with pytest.raises(ValueError, match="speed=0"):
        estimate_duration(100, "x", "y", speed=0)


def test_crossfade_overlaps_each_junction():
    a, b, c = torch.ones(100), torch.full((80,), 3.0), torch.zeros(50)
    joined = crossfade([a, b, c], 10)
    assert joined.shape == (100 + 80 + 50 - 2 * 10,)
    assert torch.equal(joined[:90], a[:90]) and torch.equal(joined[100:160], b[10:70])
    assert torch.allclose(joined[90:100], torch.linspace(1, 3, 10))
    assert torch.allclose(joined[160:170], torch.linspace(3, 0, 10))
    assert torch.equal(crossfade([a, b], 0), torch.cat([a, b]))
    assert crossfade([a, torch.ones(4)], 10).shape == (100,)  # short wave: overlap shrinks to it
    assert torch.equal(crossfade([a], 10), a)
    with pytest.raises(ValueError, match="no waveforms"):
        crossfade([], 10)

"""Which transcribed clips are kept (`f5lite.transcribe.filters`), each rule with its reason."""

from __future__ import annotations

import pytest

from f5lite.transcribe.filters import FilterSettings, Transcribed, filter_clips

STEADY = "the quick brown fox jumps over the lazy dog"  # 35 characters without spaces
ANIMALS = ("fox", "cat", "cow", "pig", "owl")


def variant(i: int) -> str:
    """Different texts of the steady clip's length (the same text twice would be a duplicate)."""
    return STEADY.replace("fox", ANIMALS[i])


def clip(text: str = STEADY, seconds: float = 3.5, speech: float = 3.0, confidence: float | None = None) -> Transcribed:
    return Transcribed(seconds=seconds, speech_seconds=speech, text=text, confidence=confidence)


def test_steady_clips_are_kept() -> None:
    clips = [clip(STEADY), clip(STEADY.replace("fox", "cat")), clip(STEADY.replace("dog", "cow"))]
    assert filter_clips(clips, FilterSettings()) == [None, None, None]


def test_empty_transcript_and_little_speech_are_left_out() -> None:
    reasons = filter_clips([clip(""), clip(variant(1), speech=1.0), clip(variant(2))], FilterSettings())
    assert reasons[0] == "no speech recognised"
    assert reasons[1] == "only 29% of the clip is speech (min_speech_share=0.5)"
    assert reasons[2] is None


def test_low_confidence_counts_only_where_the_backend_gives_one() -> None:
    settings = FilterSettings(min_confidence=0.6)
    clips = [clip(variant(0), confidence=0.3), clip(variant(1), confidence=None), clip(variant(2), confidence=0.9)]
    reasons = filter_clips(clips, settings)
    assert reasons == ["recogniser confidence 0.30 < min_confidence=0.6", None, None]


def test_a_rate_far_from_the_files_median_marks_a_wrong_transcript() -> None:
    truncated = clip("the quick", speech=3.0)  # 8 chars in 3 s: a quarter of the others' rate
    clips = [clip(), clip(STEADY.replace("fox", "cat")), truncated, clip(STEADY.replace("dog", "cow"))]
    reasons = filter_clips(clips, FilterSettings())
    assert reasons[:2] == [None, None] and reasons[3] is None
    assert reasons[2] is not None and "speaking rate 2.7 chars/s" in reasons[2] and "median 11.7" in reasons[2]
    # Within the factor, a slower clip is kept.
    assert filter_clips([clip(variant(0)), clip(variant(1), speech=5.0), clip(variant(2))], FilterSettings())[1] is None


def test_repeated_text_keeps_the_first_only() -> None:
    reasons = filter_clips([clip(), clip(STEADY.upper() + "  "), clip()], FilterSettings())
    assert reasons == [
        None,
        "the same text as an earlier clip of this file",
        "the same text as an earlier clip of this file",
    ]


def test_no_clips_no_reasons() -> None:
    assert filter_clips([], FilterSettings()) == []


@pytest.mark.parametrize(
    ("settings", "key"),
    [({"min_speech_share": 1.5}, "min_speech_share=1.5"), ({"rate_factor": 1.0}, "rate_factor=1.0")],
)
def test_bad_settings_name_the_key(settings: dict[str, float], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        FilterSettings(**settings)

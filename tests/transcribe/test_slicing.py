"""Where recordings are cut (`f5lite.transcribe.slicing`): rules checked on made-up speech probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from f5lite.transcribe.slicing import ONSET_LEAD, SliceSettings, plan_clips, speech_runs

W = 0.032  # seconds per window, as the VAD gives them


def track(*parts: tuple[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and loudness for `("speech" | "pause", seconds)` parts, in order."""
    probs, rms = [], []
    for kind, seconds in parts:
        n = round(seconds / W)
        probs += [0.9 if kind == "speech" else 0.05] * n
        rms += [-20.0 if kind == "speech" else -60.0] * n
    return np.asarray(probs, dtype=np.float32), np.asarray(rms, dtype=np.float32)


def plan(parts: list[tuple[str, float]], **settings: float):
    probs, rms = track(*parts)
    return plan_clips(probs, rms, W, len(probs) * W, SliceSettings(**settings))


def test_cuts_in_every_pause_once_clips_are_long_enough() -> None:
    parts = [("pause", 1.0), ("speech", 3.0), ("pause", 0.6), ("speech", 2.5), ("pause", 1.0), ("speech", 4.0)]
    clips, left = plan(parts)
    assert left == []
    assert len(clips) == 3
    speech = [(1.0, 4.0), (4.6, 7.1), (8.1, 12.1)]  # up to a window of rounding per part
    for clip, (start, end) in zip(clips, speech, strict=True):
        assert clip.start == pytest.approx(start - 0.1 - ONSET_LEAD, abs=3 * W)
        assert clip.end == pytest.approx(min(end + 0.1, len(track(*parts)[0]) * W), abs=3 * W)


def test_margins_never_reach_past_the_middle_of_a_pause() -> None:
    clips, _ = plan([("speech", 3.0), ("pause", 0.3), ("speech", 3.0)], margin=0.5)
    assert clips[0].end <= clips[1].start
    assert clips[0].end == pytest.approx(3.15, abs=W) and clips[1].start == pytest.approx(3.15, abs=W)
    assert clips[0].start == 0.0  # not before the recording's start


def test_short_utterances_join_the_next_until_long_enough() -> None:
    clips, left = plan([("speech", 0.8), ("pause", 0.4), ("speech", 0.9), ("pause", 0.4), ("speech", 3.0)])
    assert left == []
    assert len(clips) == 2  # 0.8 + 0.4 + 0.9 = 2.1 s stands alone; the 3 s run is its own clip
    assert clips[0].end < 2.3 <= clips[1].start  # cut in the pause after 2.1 s (the lead reaches its middle)


def test_short_pauses_and_short_noises_are_not_cuts() -> None:
    probs, _ = track(("speech", 1.5), ("pause", 0.1), ("speech", 1.5), ("pause", 1.0), ("speech", 0.1), ("pause", 1))
    runs = speech_runs(probs, W, SliceSettings())
    assert len(runs) == 1  # the 0.1 s pause is inside the utterance, the 0.1 s blip is noise
    assert runs[0][0] == 0 and runs[0][1] * W == pytest.approx(3.1, abs=W)


def test_hysteresis_keeps_a_quiet_word_end_in_the_speech() -> None:
    probs = np.asarray([0.9] * 40 + [0.4] * 10 + [0.05] * 40, dtype=np.float32)  # 0.4: above 0.5 - 0.15
    assert speech_runs(probs, W, SliceSettings(min_speech=0)) == [(0, 50)]


def test_long_speech_is_cut_at_its_quietest_window() -> None:
    probs, rms = track(("pause", 0.5), ("speech", 30.0), ("pause", 0.5))
    quiet = round(12.0 / W)
    rms[quiet] = -45.0  # a breath, still speech to the VAD
    clips, left = plan_clips(probs, rms, W, len(probs) * W, SliceSettings(max_seconds=20.0))
    assert left == [] and len(clips) == 2
    assert clips[0].end == pytest.approx(quiet * W, abs=1e-6) == clips[1].start  # no margin inside speech
    assert all(c.seconds <= 20.0 + 0.1 for c in clips)


def test_very_long_speech_is_cut_until_every_piece_fits() -> None:
    clips, _ = plan([("speech", 65.0)], max_seconds=20.0)
    assert len(clips) >= 4 and all(2.0 <= c.seconds <= 20.0 for c in clips)
    assert all(a.end == b.start for a, b in zip(clips, clips[1:], strict=False))  # nothing lost, nothing shared


def test_a_lone_short_utterance_is_left_out_with_its_reason() -> None:
    clips, left = plan([("pause", 2.0), ("speech", 1.0), ("pause", 2.0), ("speech", 3.0)], max_seconds=3.5)
    assert len(clips) == 1 and clips[0].start > 4.5
    assert len(left) == 1 and left[0].reason == "shorter than min_seconds=2" and left[0].start < 2.0 < left[0].end


def test_no_speech_gives_no_clips() -> None:
    assert plan([("pause", 10.0)]) == ([], [])


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"min_seconds": 5.0, "max_seconds": 3.0}, "min_seconds=5.0"),
        ({"threshold": 0.1}, "threshold=0.1"),
        ({"margin": -1.0}, "margin=-1.0"),
    ],
)
def test_bad_settings_name_the_key(settings: dict[str, float], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        SliceSettings(**settings)

"""Where to cut a recording into utterance clips: in pauses, never inside speech.

Works on the per-window speech probabilities and loudness of `f5lite.transcribe.vad` (w windows of `window`
seconds); pure functions on arrays, so every rule is tested without a model.

1. Speech windows, with hysteresis: speech starts at a probability of `threshold` and lasts until it falls below
   `threshold - 0.15` (Silero's own rule), so a word's quiet end does not end the speech.
2. Speech runs shorter than `min_speech` are noise (a click, a breath) and count as pause; pauses shorter than
   `min_pause` are inside an utterance (a stop consonant, a comma) and count as speech.
3. Clips grow run by run: a clip is cut at the next pause once it is at least `min_seconds` long, and never grows
   past `max_seconds`. A single run of speech longer than `max_seconds` is cut at its quietest window (away from
   its ends by `min_seconds`; among nearly equally quiet ones, the most central), again and again until every piece
   fits: a cut inside speech only where there is no pause at all.
4. Each clip keeps `margin` seconds of its pauses on both sides (`ONSET_LEAD` more before its speech), never more
   than half of a pause, so two clips never share a sample.
5. A clip shorter than `min_seconds` after all this (a lone short utterance between long pauses) is left out, with
   the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

HYSTERESIS = 0.15
"""Speech lasts until the probability falls this far below `threshold` (Silero's `neg_threshold` default)."""
ONSET_LEAD = 0.064
"""Extra seconds kept before speech: Silero's probability rises up to a few windows after a soft onset (on the demo
voices, up to 0.14 s late), while at the end of speech its hysteresis already holds on about 60 ms too long."""
TIE_DB = 1.0
"""Windows within this many dB of the quietest count as equally quiet when a cut must fall inside speech."""


@dataclass(frozen=True)
class SliceSettings:
    """How recordings are cut (the defaults suit F5-TTS-style fine-tuning data)."""

    min_seconds: float = 2.0
    """Shortest clip kept."""
    max_seconds: float = 20.0
    """Longest clip; longer speech is cut in its quietest place."""
    margin: float = 0.1
    """Seconds of pause kept before and after the speech of a clip (at most half of each pause; see `ONSET_LEAD`)."""
    threshold: float = 0.5
    """Speech probability at which speech starts."""
    min_pause: float = 0.12
    """Shorter pauses are inside an utterance, never a cut. The VAD's hysteresis eats about 60 ms of every pause, so a
    0.2 s silence between sentences shows as 0.13 to 0.16 s, while the stops inside words show as 0.1 s at most."""
    min_speech: float = 0.25
    """Shorter runs of speech are noise."""

    def __post_init__(self) -> None:
        if not 0 < self.min_seconds < self.max_seconds:
            raise ValueError(
                f"min_seconds={self.min_seconds} and max_seconds={self.max_seconds} are not valid; "
                "they need 0 < min_seconds < max_seconds"
            )
        if not HYSTERESIS < self.threshold < 1:
            raise ValueError(f"threshold={self.threshold} is not valid; it must be in ({HYSTERESIS}, 1)")
        for name in ("margin", "min_pause", "min_speech"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be >= 0")


@dataclass(frozen=True)
class Span:
    """A stretch of a recording in seconds; `reason` says why a left-out one was left out."""

    start: float
    end: float
    reason: str = ""

    @property
    def seconds(self) -> float:
        """Its length."""
        return self.end - self.start


def speech_runs(probs: np.ndarray, window: float, settings: SliceSettings) -> list[tuple[int, int]]:
    """Runs of speech as `[first, last + 1)` window indices (steps 1 and 2 of the module docstring).

    Args:
        probs: `[w]` speech probabilities.
        window: seconds per window.
        settings: thresholds and minimum lengths.

    Returns:
        Runs in order, separated by pauses of at least `min_pause`.
    """
    runs: list[tuple[int, int]] = []
    speaking, start = False, 0
    for i, p in enumerate(probs.tolist()):
        if not speaking and p >= settings.threshold:
            speaking, start = True, i
        elif speaking and p < settings.threshold - HYSTERESIS:
            speaking = False
            runs.append((start, i))
    if speaking:
        runs.append((start, len(probs)))
    runs = [r for r in runs if (r[1] - r[0]) * window >= settings.min_speech]
    merged: list[tuple[int, int]] = []
    for run in runs:
        if merged and (run[0] - merged[-1][1]) * window < settings.min_pause:
            merged[-1] = (merged[-1][0], run[1])
        else:
            merged.append(run)
    return merged


def plan_clips(
    probs: np.ndarray, rms_db: np.ndarray, window: float, duration: float, settings: SliceSettings
) -> tuple[list[Span], list[Span]]:
    """Cut a recording into clips (the whole rule set of the module docstring).

    Args:
        probs: `[w]` speech probabilities.
        rms_db: `[w]` loudness of each window, for cuts inside speech.
        window: seconds per window.
        duration: the recording's length in seconds (the last window may reach past it).
        settings: the cutting rules.

    Returns:
        `(clips, left_out)`: the clips in order, and the stretches of speech left out with their reason.
    """
    runs = speech_runs(probs, window, settings)
    min_w = max(1, math.ceil(settings.min_seconds / window - 1e-9))
    max_w = max(min_w + 1, int(settings.max_seconds / window))
    groups: list[tuple[int, int]] = []
    for run in runs:
        if groups and groups[-1][1] - groups[-1][0] < min_w and run[1] - groups[-1][0] <= max_w:
            groups[-1] = (groups[-1][0], run[1])  # too short to stand alone, and the next run still fits
        else:
            groups.append(run)
    pieces = [piece for group in groups for piece in _split_long(group, rms_db, min_w, max_w)]
    clips: list[Span] = []
    left_out: list[Span] = []
    for i, (first, end) in enumerate(pieces):
        # Margins reach at most halfway into the pause on each side (0 where a piece was cut inside speech).
        before = (first - pieces[i - 1][1]) * window / 2 if i else first * window
        after = (pieces[i + 1][0] - end) * window / 2 if i + 1 < len(pieces) else duration - end * window
        span = Span(
            max(0.0, first * window - min(settings.margin + ONSET_LEAD, before)),
            min(duration, end * window + min(settings.margin, max(0.0, after))),
        )
        if (end - first) * window < settings.min_seconds:
            left_out.append(Span(span.start, span.end, f"shorter than min_seconds={settings.min_seconds:g}"))
        else:
            clips.append(span)
    return clips, left_out


def _split_long(run: tuple[int, int], rms_db: np.ndarray, min_w: int, max_w: int) -> list[tuple[int, int]]:
    """`run` cut at its quietest window, recursively, until every piece is at most `max_w` windows."""
    first, end = run
    if end - first <= max_w:
        return [run]
    lo, hi = first + min_w, end - min_w
    if hi <= lo:  # cannot keep both sides min_w long: cut in the middle
        cut = (first + end) // 2
    else:
        # The quietest window; among those within TIE_DB of it, the one nearest the middle (even pieces).
        loudness = rms_db[lo:hi]
        quiet = np.flatnonzero(loudness <= loudness.min() + TIE_DB) + lo
        cut = int(quiet[np.argmin(np.abs(quiet - (first + end) / 2))])
    return _split_long((first, cut), rms_db, min_w, max_w) + _split_long((cut, end), rms_db, min_w, max_w)

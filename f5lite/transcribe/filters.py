"""Which transcribed clips become training data, and why the others do not.

A clip is left out, with the first reason that applies, when:

- its transcript is empty (nothing was recognised);
- too little of it is speech (`min_speech_share` of its length): mostly noise, music or silence;
- the recogniser's confidence, where the backend gives one, is under `min_confidence`;
- its speaking rate (characters of transcript per second of speech) is more than `rate_factor` times above or
  below the median of the kept clips of the same source file: one speaker reads at a steady pace, so such a clip
  most likely has a wrong or truncated transcript (the file's median, not a global one, because speakers differ);
- its normalised transcript repeats one already kept from the same source (a jingle, a repeated take).

Pure functions on what the slicer and the recogniser produced, so each rule is tested without audio.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FilterSettings:
    """The thresholds of the rules in the module docstring."""

    min_speech_share: float = 0.5
    """Least share of a clip's length that the VAD heard as speech."""
    min_confidence: float = 0.0
    """Least recogniser confidence in [0, 1] (0: keep whatever the backend says; ignored where it gives none)."""
    rate_factor: float = 2.0
    """How far (as a factor, either way) a clip's speaking rate may be from its file's median."""

    def __post_init__(self) -> None:
        for name in ("min_speech_share", "min_confidence"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; it must be in [0, 1]")
        if not self.rate_factor > 1.0:
            raise ValueError(f"rate_factor={self.rate_factor} is not valid; it must be > 1")


@dataclass(frozen=True)
class Transcribed:
    """One clip of one source file, as the slicer and the recogniser left it.

    Attributes:
        seconds: the clip's length.
        speech_seconds: how much of it the VAD heard as speech.
        text: the transcript, normalised as the tokenizer needs.
        confidence: the recogniser's confidence in [0, 1], or None where the backend gives none.
    """

    seconds: float
    speech_seconds: float
    text: str
    confidence: float | None = None

    @property
    def rate(self) -> float:
        """Characters per second of speech (spaces not counted)."""
        return len(self.text.replace(" ", "")) / max(self.speech_seconds, 1e-6)


def filter_clips(clips: Sequence[Transcribed], settings: FilterSettings) -> list[str | None]:
    """The reason each clip of one source file is left out, or None for a clip kept.

    Args:
        clips: the file's clips in order.
        settings: the thresholds.

    Returns:
        One entry per clip, in order.
    """
    reasons: list[str | None] = [_own_reason(clip, settings) for clip in clips]
    rates = [clip.rate for clip, reason in zip(clips, reasons, strict=True) if reason is None]
    if rates:
        median = statistics.median(rates)
        for i, clip in enumerate(clips):
            if reasons[i] is None and not median / settings.rate_factor <= clip.rate <= median * settings.rate_factor:
                reasons[i] = (
                    f"speaking rate {clip.rate:.1f} chars/s is over {settings.rate_factor:g}x away from the file's "
                    f"median {median:.1f}: the transcript is likely wrong"
                )
    seen: set[str] = set()
    for i, clip in enumerate(clips):
        if reasons[i] is None:
            key = " ".join(clip.text.lower().split())
            if key in seen:
                reasons[i] = "the same text as an earlier clip of this file"
            seen.add(key)
    return reasons


def _own_reason(clip: Transcribed, settings: FilterSettings) -> str | None:
    """The first rule a clip fails on its own (those that need no other clip), or None."""
    if not clip.text.strip():
        return "no speech recognised"
    share = clip.speech_seconds / clip.seconds if clip.seconds > 0 else 0.0
    if share < settings.min_speech_share:
        return f"only {share:.0%} of the clip is speech (min_speech_share={settings.min_speech_share:g})"
    if clip.confidence is not None and clip.confidence < settings.min_confidence:
        return f"recogniser confidence {clip.confidence:.2f} < min_confidence={settings.min_confidence:g}"
    return None

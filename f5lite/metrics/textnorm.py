"""Text normalisation and error rates for intelligibility: WER for English, CER for Chinese, scored with jiwer.

Both the reference and the ASR transcript are normalised the same way before scoring, as F5-TTS's evaluation does
(lowercase, punctuation removed): NFKC (full-width forms to ASCII), lowercase, every punctuation or symbol
character (Unicode categories P* and S*) replaced by a space, except apostrophes inside words ("don't" stays),
spaces collapsed. For Chinese, spaces are removed as well and characters are scored. Numbers are not expanded:
"20" and "twenty" count as different words. Chinese is not converted between traditional and simplified script.
"""

from __future__ import annotations

import unicodedata

from f5lite.metrics.backend import EVAL_EXTRA, require
from f5lite.metrics.items import LANGUAGES

_APOSTROPHES = {"\u2019": "'", "\u2018": "'", "\u02bc": "'"}


def check_language(language: str) -> None:
    """Raise ValueError naming `language` unless it is one of `LANGUAGES`."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}")


def normalize_text(text: str, language: str) -> str:
    """Normalise a reference or a transcript for scoring (see the module docstring).

    Args:
        text: any text.
        language: "en" (words separated by single spaces) or "zh" (characters, no spaces).

    Returns:
        The normalised text; "" when nothing scorable is left.

    Raises:
        ValueError: unknown `language`.
    """
    check_language(language)
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(_APOSTROPHES.get(ch, ch) for ch in text)
    # Apostrophes survive this pass so that "don't" stays one word; quote marks around a word are stripped below.
    spaced = "".join(" " if ch != "'" and unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    words = [word.strip("'") for word in spaced.split()]
    if language == "zh":
        return "".join(word.replace("'", "") for word in words)
    return " ".join(word for word in words if word)


def error_rate(reference: str, transcript: str, language: str) -> float:
    """WER ("en") or CER ("zh") of `transcript` against `reference`, both normalised with `normalize_text`.

    Returns:
        (substitutions + deletions + insertions) / reference length, in words ("en") or characters ("zh"); can
        exceed 1 when the transcript has more words than the reference.

    Raises:
        ValueError: unknown `language`, or nothing is left of `reference` after normalisation.
        ImportError: jiwer is not installed.
    """
    jiwer = require("jiwer", EVAL_EXTRA, "the wer metric")
    ref = normalize_text(reference, language)
    hyp = normalize_text(transcript, language)
    if not ref:
        raise ValueError(f"reference text {reference!r} has nothing to score once normalised")
    score = jiwer.wer(ref, hyp) if language == "en" else jiwer.cer(ref, hyp)
    return float(score)

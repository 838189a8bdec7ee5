"""Text preparation for inference: the reference transcript's ending, and long text cut into chunks.

F5-TTS models were trained on clips of up to 30 s, and F5-TTS budgets about 22 s for reference plus generated
speech. A chunk therefore holds as many UTF-8 bytes as the reference speaker says in the time left after the
reference, measured from the reference's own bytes per second. Text is cut at sentence ends; a sentence too long
for one chunk is cut at clause marks, then between words, and a word too long (a URL, base64, CJK without
punctuation) between characters: no chunk is longer than the budget, so none asks for more than the model's window.

A streamed response (`f5lite-serve`, the studio's Speak) has its first piece cut shorter (`split_text` with
`FIRST_BYTES`): at a clause mark or between words, so that its first audio comes after one short sampler call.

The reference transcript must be a transcript of the clip. Its whitespace runs become single spaces when it is
prepared, and then every character counts, spaces included: one with more than `MAX_REF_CHARS_PER_SECOND` per second
of audio (f5lite-prepare's bound) is refused, since a model generates at least a frame per text token and a long
text would turn every chunk into minutes of frames. The same bound holds for the transcript's tokens as the model
reads them (phonemes can outnumber letters), counted after the characters, so that no huge text is phonemized first.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from f5lite.infer.config import EMPTY_REF_TEXT
from f5lite.prepare.checks import Limits

MAX_SECONDS = 22.0
"""Reference plus generated audio per chunk, in seconds (F5-TTS's budget)."""
MAX_REF_CHARS_PER_SECOND = Limits.max_chars_per_second
"""The most characters, spaces included, or tokens per second of reference audio in its prepared transcript."""
FIRST_BYTES = 40
"""UTF-8 bytes of the first piece of a streamed text (a few words: about two seconds of English speech)."""

# Sentence ends, then clause marks, then word gaps: the places a too-long text is cut, coarsest first. Western
# punctuation counts only before whitespace ("3.5" and "e.g.x" stay whole); CJK punctuation needs none.
_BREAKS = (
    re.compile(r"(?<=[.!?])\s+|(?<=[。！？])"),
    re.compile(r"(?<=[,;:])\s+|(?<=[，；：、])"),
    re.compile(r"\s+"),
)
_SENTENCE_ENDS = (".", "!", "?", "。", "！", "？")


def prepare_ref_text(ref_text: str) -> str:
    """End the reference transcript like a sentence, so the generated text starts a new one.

    Whitespace runs (line breaks included) become single spaces. A transcript that does not end with sentence
    punctuation gets a full stop ("." after ASCII, "。" after CJK), and one ending in an ASCII character gets a trailing
    space (F5-TTS does both; it can add two spaces, f5lite one).

    Args:
        ref_text: the transcript of the reference audio.

    Returns:
        The transcript as it is fed to the model, e.g. "Hello   there" -> "Hello there. ".

    Raises:
        ValueError: the transcript is empty or only whitespace.
    """
    text = " ".join(ref_text.split())
    if not text:
        raise ValueError(EMPTY_REF_TEXT)
    if not text.endswith(_SENTENCE_ENDS):
        text += "." if len(text[-1].encode("utf-8")) == 1 else "。"
    return text + " " if len(text[-1].encode("utf-8")) == 1 else text


def max_chunk_bytes(ref_text: str, ref_seconds: float, speed: float = 1.0) -> int:
    """UTF-8 bytes of text per chunk: what the reference speaker says in `MAX_SECONDS - ref_seconds` at `speed`.

    Args:
        ref_text: the prepared reference transcript.
        ref_seconds: length of the reference audio.
        speed: speaking speed factor (faster speech fits more text).

    Returns:
        A positive byte budget.

    Raises:
        ValueError: the reference is `MAX_SECONDS` long or longer, leaving no room to generate, or its transcript is
            too long for it (`check_ref_text`).
    """
    if ref_seconds >= MAX_SECONDS:
        raise ValueError(
            f"the reference audio is {ref_seconds:.1f} s long; it must be shorter than {MAX_SECONDS:.0f} s "
            "(5 to 12 s works best): trim it"
        )
    check_ref_text(ref_text, ref_seconds)
    rate = len(ref_text.encode("utf-8")) / ref_seconds
    return max(1, int(rate * (MAX_SECONDS - ref_seconds) * speed))


def check_ref_text(
    ref_text: str, ref_seconds: float, count: Callable[[str], int] = len, unit: str = "characters"
) -> None:
    """Refuse a reference transcript with more than `MAX_REF_CHARS_PER_SECOND` characters (or tokens) per second.

    Args:
        ref_text: the transcript, prepared (`prepare_ref_text`: its spaces are counted as they reach the model).
        ref_seconds: the clip's length (> 0).
        count: how to count `ref_text`: `len` (characters, spaces included) or a text encoder's `length` (ids).
        unit: what `count` counts, for the message.

    Raises:
        ValueError: one line with the rate and the bound.
    """
    size = count(ref_text)
    if size > MAX_REF_CHARS_PER_SECOND * ref_seconds:
        raise ValueError(
            f"the reference transcript has {size} {unit} for {ref_seconds:.1f} s of audio "
            f"({size / ref_seconds:.0f} per second; at most {MAX_REF_CHARS_PER_SECOND:g}): give the "
            "transcript of this clip"
        )


def chunk_text(text: str, max_bytes: int) -> list[str]:
    """Cut text into chunks of at most `max_bytes` UTF-8 bytes, at sentence ends where possible.

    Whitespace runs (newlines included) become single spaces. Sentences are packed greedily; a sentence longer
    than `max_bytes` is cut at clause marks, then between words, and a word longer than the budget between
    characters (never inside a character's UTF-8 bytes): no chunk has more than `max_bytes` bytes (or, for a
    budget below one character's bytes, more than one character).

    Args:
        text: the text to speak.
        max_bytes: byte budget per chunk (>= 1).

    Returns:
        The chunks in order (none for blank text).
    """
    chunks: list[str] = []
    current = ""
    for piece in _pieces(" ".join(text.split()), max_bytes, 0):
        joined = _join(current, piece)
        if current and _num_bytes(joined) > max_bytes:
            chunks.append(current)
            current = piece
        else:
            current = joined
    if current:
        chunks.append(current)
    return chunks


def split_text(text: str, max_bytes: int, first_bytes: int | None = None) -> list[str]:
    """The pieces a text is spoken in: `chunk_text`'s chunks, the first cut to `first_bytes` when given.

    Args:
        text: the text to speak.
        max_bytes: the most bytes of a piece (`max_chunk_bytes` of the reference).
        first_bytes: for a streamed response, the most bytes of the first piece (`FIRST_BYTES`); None: no shorter
            first piece.

    Returns:
        The pieces in order (none for blank text).
    """
    chunks = chunk_text(text, max_bytes)
    if first_bytes is None or not chunks or _num_bytes(chunks[0]) <= first_bytes:
        return chunks
    head = chunk_text(chunks[0], first_bytes)
    # chunk_text cuts after a mark or at a space and never changes the text: the first piece is a prefix.
    rest = chunks[0][len(head[0]) :].strip()
    return [head[0], *([rest] if rest else []), *chunks[1:]]


def _pieces(text: str, max_bytes: int, level: int) -> list[str]:
    """Split `text` at the coarsest break level that brings pieces under the budget; characters last."""
    if _num_bytes(text) <= max_bytes:
        return [text] if text else []
    if level == len(_BREAKS):
        return _by_characters(text, max_bytes)
    return [p for part in _BREAKS[level].split(text) for p in _pieces(part, max_bytes, level + 1)]


def _by_characters(word: str, max_bytes: int) -> list[str]:
    """A word cut into runs of whole characters of at most `max_bytes` bytes each (at least one character)."""
    runs, current, size = [], "", 0
    for char in word:
        width = _num_bytes(char)
        if current and size + width > max_bytes:
            runs.append(current)
            current, size = "", 0
        current, size = current + char, size + width
    return [*runs, current]


def _join(left: str, right: str) -> str:
    # Western text was split at whitespace, CJK text at punctuation with no space after it.
    if left and len(left[-1].encode("utf-8")) == 1:
        return f"{left} {right}"
    return left + right


def _num_bytes(text: str) -> int:
    return len(text.encode("utf-8"))

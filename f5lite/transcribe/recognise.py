"""The transcript of each clip: the recogniser over clips in batches, its text made what the tokenizers expect.

The backends are those of `f5lite.metrics.asr` (`load_recognizer`): PocketSphinx offline by default, Whisper or
faster-whisper from a local model directory, Paraformer for Chinese. A batch is handed to the recogniser's `hear`,
which decodes it in one call where the backend can (Whisper) and gives a confidence where it has one.

Training text keeps its case and punctuation (F5-TTS's vocabularies hold both), so the normalisation is only what
tokenizers need: Unicode NFC (one code point per accented letter, as typed text has it, so a character tokenizer
sees the vocabulary's characters), every run of white space one space, and no spaces between Chinese characters
(FunASR puts one between every character; F5-TTS's Chinese texts have none, and the pinyin tokenizer would turn each
into a space token).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from torch import Tensor

from f5lite.metrics.asr import Heard, Recognizer

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])")


def normalise_transcript(text: str) -> str:
    """A recogniser's text as training text (see the module docstring).

    Args:
        text: the raw transcript.

    Returns:
        The text, NFC, single spaces, none between Chinese characters, ends stripped.
    """
    text = unicodedata.normalize("NFC", text)
    text = " ".join(text.split())
    return _SPACE_BETWEEN_CJK.sub("", text)


def recognise(recognizer: Recognizer, clips: Sequence[Tensor], sample_rate: int, batch_size: int) -> list[Heard]:
    """Transcribe clips, `batch_size` at a time, with normalised text.

    Args:
        recognizer: from `f5lite.metrics.asr.load_recognizer`.
        clips: `[samples]` mono waveforms, all at `sample_rate`.
        sample_rate: their rate (the recogniser resamples).
        batch_size: clips per call of the recogniser.

    Returns:
        One `Heard` per clip, in order.
    """
    heard: list[Heard] = []
    for first in range(0, len(clips), batch_size):
        for result in recognizer.hear(clips[first : first + batch_size], sample_rate):
            heard.append(Heard(normalise_transcript(result.text), result.confidence))
    return heard

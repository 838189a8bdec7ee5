"""Tokenizers, selected by name: how a text is split into tokens before they become ids.

- "char": every Unicode character is a token, looked up in a vocab.
- "byte": also splits into characters, but the ids are the characters' UTF-8 bytes (0..255); no vocab.
- "pinyin": F5-TTS's pinyin conversion (see `f5lite.text.pinyin`), looked up in a vocab. The released F5-TTS
  models use it, and it needs the `zh` extra.
"""

from __future__ import annotations

from collections.abc import Callable

from f5lite.text.pinyin import load_zh_backend, pinyin_tokenize

Tokenizer = Callable[[str], list[str]]
"""Splits one text into tokens."""

TOKENIZER_NAMES = ("char", "byte", "pinyin")
"""Every accepted tokenizer name."""

VOCAB_TOKENIZERS = frozenset({"char", "pinyin"})
"""The tokenizers whose tokens are looked up in a vocab (byte ids need none)."""

BYTE_NUM_EMBEDS = 256
"""Number of distinct ids of the byte tokenizer (F5-TTS's vocab size for "byte")."""


def char_tokenize(text: str) -> list[str]:
    """Split a text into its Unicode characters (code points, so a combining accent is its own token).

    Args:
        text: A raw text.

    Returns:
        One token per character.
    """
    return list(text)


def get_tokenizer(name: str) -> Tokenizer:
    """Return the tokenizer called `name`.

    For "pinyin" this loads jieba and pypinyin now, so a missing `zh` extra is reported when the tokenizer is set
    up rather than at the first batch.

    Args:
        name: One of `TOKENIZER_NAMES`.

    Returns:
        The tokenizer function.

    Raises:
        ValueError: `name` is not a known tokenizer; the message lists the known ones.
        ImportError: "pinyin" was asked for without the `zh` extra installed.
    """
    if name in ("char", "byte"):
        return char_tokenize
    if name == "pinyin":
        load_zh_backend()
        return pinyin_tokenize
    raise ValueError(f"unknown tokenizer {name!r}; choose one of: {', '.join(map(repr, TOKENIZER_NAMES))}")

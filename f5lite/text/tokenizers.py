"""Tokenizers, selected by name: how a text is split into tokens before they become ids.

- "char": every Unicode character is a token, looked up in a vocab.
- "byte": also splits into characters, but the ids are the characters' UTF-8 bytes (0..255); no vocab.
- "pinyin": F5-TTS's pinyin conversion (see `f5lite.text.pinyin`), looked up in a vocab. The released F5-TTS
  models use it, and it needs the `zh` extra.
- "ipa" or "ipa:<language>": espeak-ng's IPA transcription, one token per character, looked up in a vocab (see
  `f5lite.text.ipa`); plain "ipa" reads English (en-us), "ipa:de" German, and so on for every language espeak-ng
  speaks. It needs the `ipa` extra and espeak-ng.

The name is the whole tokenizer, language included, so that it is recorded as one string with a run, an export or
a prepared dataset, and the model's texts are always tokenized as its training texts were.
"""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Callable

from f5lite.text.ipa import IPA, ipa_language, ipa_tokenize, load_ipa_backend
from f5lite.text.pinyin import load_zh_backend, pinyin_tokenize

Tokenizer = Callable[[str], list[str]]
"""Splits one text into tokens."""

TOKENIZER_NAMES = ("char", "byte", "pinyin", "ipa")
"""Every tokenizer family; "ipa" may also be named with its language, as "ipa:<espeak-ng language>"."""

VOCAB_TOKENIZERS = frozenset({"char", "pinyin", "ipa"})
"""The tokenizer families whose tokens are looked up in a vocab (byte ids need none); see `uses_vocab`."""

# espeak-ng's language codes: lower-case letters, digits and hyphens ("en-us", "cmn", "en-gb-x-rp").
_LANGUAGE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")

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


def tokenizer_family(name: str) -> str:
    """The family of a tokenizer name: "ipa" for "ipa:de", the name itself otherwise."""
    return name.partition(":")[0]


def uses_vocab(name: str) -> bool:
    """Whether the tokenizer `name` (e.g. "char", "ipa:de") maps its tokens through a vocab; "byte" does not."""
    return tokenizer_family(name) in VOCAB_TOKENIZERS


def check_tokenizer_name(name: str, key: str = "tokenizer") -> None:
    """Refuse a tokenizer name that is not one of `TOKENIZER_NAMES`, or "ipa:" with a language.

    Only the form is checked, so that no tokenizer backend has to be installed to read a config; whether espeak-ng
    knows the language is checked when the tokenizer is set up (`get_tokenizer`).

    Args:
        name: The name found.
        key: What to call it in the message, e.g. "data.tokenizer".

    Raises:
        ValueError: One line naming `key`, the value and the accepted forms.
    """
    family, colon, language = name.partition(":")
    if family not in TOKENIZER_NAMES:
        raise ValueError(
            f"{key}={name!r} is not valid; choose one of: {', '.join(TOKENIZER_NAMES)} (or ipa:<espeak-ng language>)"
        )
    if colon and family != IPA:
        raise ValueError(f"{key}={name!r} is not valid: only ipa takes a language (ipa:<espeak-ng language>)")
    if colon and not _LANGUAGE.fullmatch(language):
        raise ValueError(
            f"{key}={name!r} is not valid: after 'ipa:' comes an espeak-ng language code, lower-case letters, digits "
            "and hyphens (e.g. ipa:de, ipa:en-gb)"
        )


def tokenizer_argument(value: str) -> str:
    """The `type=` of a `--tokenizer` option in argparse: the value, checked by `check_tokenizer_name`.

    Raises:
        argparse.ArgumentTypeError: the value is not a tokenizer name (argparse prints the message and exits).
    """
    try:
        check_tokenizer_name(value, "--tokenizer")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return value


def get_tokenizer(name: str) -> Tokenizer:
    """Return the tokenizer called `name`.

    For "pinyin" this loads jieba and pypinyin now, and for "ipa" espeak-ng in its language, so that a missing
    extra or an unknown language is reported when the tokenizer is set up rather than at the first batch.

    Args:
        name: One of `TOKENIZER_NAMES`, or "ipa:<espeak-ng language>".

    Returns:
        The tokenizer function (picklable, so that it can be sent to worker processes).

    Raises:
        ValueError: `name` is not a known tokenizer (the message lists the known ones), or espeak-ng does not know
            the language of an ipa tokenizer.
        ImportError: "pinyin" without the `zh` extra, or "ipa" without the `ipa` extra or espeak-ng.
    """
    if name in ("char", "byte"):
        return char_tokenize
    if name == "pinyin":
        load_zh_backend()
        return pinyin_tokenize
    if tokenizer_family(name) == IPA:
        check_tokenizer_name(name)
        try:
            load_ipa_backend(ipa_language(name))
        except ValueError as err:
            raise ValueError(f"tokenizer {name!r} (data.tokenizer, or --tokenizer): {err}") from None
        return functools.partial(ipa_tokenize, language=ipa_language(name))
    raise ValueError(f"unknown tokenizer {name!r}; choose one of: {', '.join(map(repr, TOKENIZER_NAMES))}")

"""IPA phonemes from espeak-ng, one token per IPA character: the `ipa` tokenizer, for any language espeak-ng speaks.

A text becomes espeak-ng's IPA transcription, through `phonemizer` (which drives espeak-ng's shared library: about
3,000 sentences of 45 characters a second on one core), and each Unicode character of that transcription is a
token, so that the vocab is small and built from the data like the char tokenizer's. Kept in the transcription:

- word boundaries, as the space token;
- punctuation (`;:,.!?¡¿—…"«»“”`), where it was, since pauses and intonation follow it;
- primary and secondary stress (`ˈ`, `ˌ`, each a token just before the stressed vowel, where espeak-ng puts it)
  and the length mark (`ː`, a token after its vowel): English spelling does not show stress, and a model that
  cannot see it has to guess the rhythm.

Sounds written with several characters (the diphthong `oʊ`, the affricate `dʒ`, a vowel and its combining tilde)
are several tokens, as a character tokenizer splits letters: the vocab stays a few dozen tokens that any text of
the language covers, and the model learns the pairs from context.

espeak-ng's language-switch flags (`(fr)` around a French word in an English text) are dropped: the phonemes
espeak-ng chose for that word stay. Digits and abbreviations are spelt out by espeak-ng in the language's words.

The language is part of the tokenizer's name, `ipa:<espeak-ng language>` (`ipa:de`, `ipa:es`, `ipa:en-gb`); plain
`ipa` is `ipa:en-us`. So it travels wherever the tokenizer's name does (a run's config and identity, an export, a
duration predictor, a prepared dataset), and inference phonemizes its text as training did.

It needs the optional `ipa` extra (`phonemizer`) and the espeak-ng program's library (`apt-get install espeak-ng`,
`brew install espeak-ng`); both are loaded only when an ipa tokenizer is set up, so f5lite imports without them.
"""

from __future__ import annotations

import difflib
import functools
import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phonemizer.backend import EspeakBackend

IPA = "ipa"
"""The tokenizer family name."""

DEFAULT_LANGUAGE = "en-us"
"""The espeak-ng language of a plain `ipa` tokenizer."""

IPA_INSTALL_HINT = "pip install 'f5lite[ipa]', and espeak-ng itself (apt-get install espeak-ng, brew install espeak-ng)"

PUNCTUATION = ';:,.!?¡¿—…"«»“”'
"""Punctuation kept in the transcription (phonemizer's default set; espeak-ng itself would drop it)."""

# phonemizer warns on every call whose transcription has another word count than its text ("3 o'clock" is
# three words spoken), which is how speech is, not a fault; only its errors are worth a line.
_PHONEMIZER_LOG = logging.getLogger(f"{__name__}.phonemizer")
_PHONEMIZER_LOG.setLevel(logging.ERROR)

_ESPEAK_LOCK = threading.Lock()
"""Held around every call into espeak-ng: its library keeps one text buffer per process, so two threads phonemizing at
once (the server's requests and its model thread, the studio's Speak) can each get the other's phonemes."""


def ipa_language(name: str) -> str:
    """The espeak-ng language of an ipa tokenizer name: `ipa` -> `en-us`, `ipa:de` -> `de`."""
    _, _, language = name.partition(":")
    return language or DEFAULT_LANGUAGE


@functools.cache
def load_ipa_backend(language: str) -> EspeakBackend:
    """espeak-ng set up for one language, once per process and language.

    Args:
        language: An espeak-ng language code, e.g. `en-us`, `de`, `cmn`.

    Returns:
        The phonemizer backend that transcribes texts of that language.

    Raises:
        ImportError: phonemizer or espeak-ng is not installed; the message says how to install them.
        ValueError: espeak-ng does not speak `language`; the message names the closest codes it knows.
    """
    with _ESPEAK_LOCK:  # setting espeak-ng up calls into it too
        return _new_backend(language)


def _new_backend(language: str) -> EspeakBackend:
    backend_class = _espeak_backend_class()
    known = backend_class.supported_languages()
    if language not in known:
        close = difflib.get_close_matches(language, list(known), n=5, cutoff=0.5)
        hint = f"close ones: {', '.join(close)}" if close else "e.g. en-us, en-gb, de, es, fr, cmn"
        raise ValueError(
            f"espeak-ng does not know the language {language!r} ({hint}; `espeak-ng --voices` lists all {len(known)})"
        )
    return backend_class(
        language,
        punctuation_marks=PUNCTUATION,
        preserve_punctuation=True,
        with_stress=True,
        language_switch="remove-flags",
        logger=_PHONEMIZER_LOG,
    )


def ipa_tokenize(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Tokenize one text as its IPA transcription, one token per character.

    Args:
        text: A raw text.
        language: The espeak-ng language to read it in.

    Returns:
        The transcription's characters: phonemes, stress and length marks, " " between words, punctuation.

    Raises:
        ImportError: phonemizer or espeak-ng is not installed.
        ValueError: espeak-ng does not speak `language`.
    """
    return list(ipa_transcribe([text], language)[0])


def ipa_transcribe(texts: list[str], language: str = DEFAULT_LANGUAGE) -> list[str]:
    """espeak-ng's IPA transcriptions of several texts, safe to call from several threads at once.

    Args:
        texts: Raw texts; a line break inside one is read as a space.
        language: The espeak-ng language to read them in.

    Returns:
        One transcription per text, words separated by one space, no leading or trailing space ("" for a text
        with nothing to say).

    Raises:
        ImportError: phonemizer or espeak-ng is not installed.
        ValueError: espeak-ng does not speak `language`.
    """
    backend = load_ipa_backend(language)
    return [_transcribe_one(backend, text) for text in texts]


def _transcribe_one(backend: EspeakBackend, text: str) -> str:
    """One text's transcription: phonemizer is given it alone, and every line it answers is joined.

    phonemizer splits a text at punctuation and puts the marks back afterwards; for some texts ("1.1.") that gives
    two lines for one text, and in a batch every later transcription would shift onto the wrong text. One call per
    text costs no more (phonemizer calls espeak-ng line by line anyway) and keeps each transcription with its text.
    """
    flat = " ".join(text.split())  # a line break would make a second line
    if not flat:
        return ""
    with _ESPEAK_LOCK:  # per text, so that a long batch does not keep a request's short text waiting
        lines = backend.phonemize([flat], strip=True)
    return " ".join(" ".join(lines).split())


def _espeak_backend_class() -> type[EspeakBackend]:
    try:
        from phonemizer.backend import EspeakBackend
    except ImportError as err:
        raise ImportError(
            f"the ipa tokenizer needs phonemizer, which is not installed (missing module: {err.name}); "
            f"install it with: {IPA_INSTALL_HINT}"
        ) from err
    if not EspeakBackend.is_available():
        raise ImportError(
            f"the ipa tokenizer needs espeak-ng, whose library was not found; install: {IPA_INSTALL_HINT}"
        )
    return EspeakBackend

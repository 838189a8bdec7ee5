"""`--vocab-of`: which tokens of the transcripts a pretrained model's vocabulary lacks, and the vocabulary extended.

A model fine-tuned on text with a token its vocabulary lacks reads that token as a space (id 0, F5-TTS's unknown
id): an accented name, a currency sign or a Chinese character the base model never saw is silently lost. The check
tokenizes every kept clip's transcript as training will (characters, or pinyin syllables with the `pinyin`
tokenizer), lists each missing token with its count and a few clips that hold it, and writes the pretrained
vocabulary with the missing tokens appended (every old id unchanged: `f5lite.text.vocab_builder`), which is what
`f5lite-prepare --vocab` and the fine-tune recipes take.

The transcripts are read from the clips' `.txt` files as they are now, so corrections made since are counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from f5lite.text import Vocab, get_tokenizer, load_vocab
from f5lite.text.tokenizers import VOCAB_TOKENIZERS, uses_vocab
from f5lite.text.vocab_builder import build_vocab

VOCAB_FILE = "vocab.txt"
"""The vocabulary's name inside a model directory (exports and F5-TTS's checkpoint folders)."""
EXAMPLES = 3
"""Clips named per missing token."""


@dataclass(frozen=True)
class MissingToken:
    """A token of the transcripts that the base vocabulary lacks.

    Attributes:
        token: the token.
        count: how often it occurs in the kept transcripts.
        examples: up to `EXAMPLES` clips that hold it (their `.txt` path relative to OUT).
    """

    token: str
    count: int
    examples: tuple[str, ...]


@dataclass(frozen=True)
class VocabCheck:
    """The outcome of the check.

    Attributes:
        base: the base vocabulary's file.
        tokens: the extended vocabulary in id order (the base's tokens, then the missing ones).
        missing: the missing tokens, most frequent first.
    """

    base: str
    tokens: tuple[str, ...]
    missing: tuple[MissingToken, ...]


def load_base_vocab(source: Path) -> Vocab:
    """The vocabulary of a model directory (its `vocab.txt`) or of a vocabulary file.

    Raises:
        ValueError: no such file or directory, a directory without `vocab.txt`, or a file that is not a vocabulary.
    """
    path = source / VOCAB_FILE if source.is_dir() else source
    if not path.is_file():
        where = f"{source} has no {VOCAB_FILE}" if source.is_dir() else f"{source} does not exist"
        raise ValueError(f"--vocab-of: {where}; give a model directory with a {VOCAB_FILE}, or a vocab file")
    return load_vocab(path)


def check_vocab(texts: Iterable[tuple[str, str]], base: Vocab, tokenizer: str) -> VocabCheck:
    """Compare the tokens of the transcripts with a base vocabulary.

    Args:
        texts: `(clip, transcript)` pairs of the kept clips.
        base: the pretrained vocabulary.
        tokenizer: "char", "pinyin" or "ipa[:<language>]" (the byte tokenizer has no vocabulary).

    Returns:
        The missing tokens and the extended vocabulary.

    Raises:
        ValueError: a tokenizer without a vocabulary.
        ImportError: "pinyin" without the `zh` extra.
    """
    if not uses_vocab(tokenizer):
        names = ", ".join(sorted(VOCAB_TOKENIZERS))
        raise ValueError(f"--vocab-of needs a tokenizer with a vocabulary ({names}), got {tokenizer!r}")
    tokenize = get_tokenizer(tokenizer)
    token_lists = []
    where: defaultdict[str, list[str]] = defaultdict(list)
    for clip, text in texts:
        tokens = tokenize(text)
        token_lists.append(tokens)
        for token in dict.fromkeys(tokens):
            if token not in base and len(where[token]) < EXAMPLES:
                where[token].append(clip)
    result = build_vocab(token_lists, base)
    missing = sorted(result.missing.items(), key=lambda item: (-item[1], item[0]))
    return VocabCheck(
        base=base.source,
        tokens=result.tokens,
        missing=tuple(MissingToken(token, count, tuple(where[token])) for token, count in missing),
    )

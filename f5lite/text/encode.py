"""Batches of texts to padded id tensors, with the ids of F5-TTS's `list_str_to_idx` and `list_str_to_byte`.

Ein notation: b - batch size, nt - text length in ids after padding.

The ids are vocab ids (or UTF-8 bytes) as they are written in `vocab.txt`; the model shifts every id by +1 itself,
so that -1 padding becomes its filler row 0.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from f5lite.text.tokenizers import BYTE_NUM_EMBEDS, get_tokenizer, uses_vocab
from f5lite.text.vocab import Vocab

logger = logging.getLogger(__name__)

PAD_ID = -1
"""Id that right-pads the rows of a batch."""

UNKNOWN_ID = 0
"""Id given to tokens that are not in the vocab: the space's id, as in F5-TTS."""

_MAX_LISTED_UNKNOWN = 20  # keeps the per-batch warning readable; `EncodedText.unknown` has them all


@dataclass(frozen=True)
class EncodedText:
    """A batch of texts as ids.

    Attributes:
        ids: `[b, nt]` int64 ids, right-padded with -1. `nt` is the longest row's length but at least 1: a batch
            of empty texts gives one column of -1 (which the model reads as filler, i.e. no text) instead of a
            zero-width tensor, which convolutions such as the ConvNeXt text blocks reject.
        lengths: `[b]` int64 number of real ids per row (0 for an empty text).
        unknown: The tokens that were not in the vocab and became id 0, with how often each occurred. Always empty
            for the byte tokenizer.
    """

    ids: torch.Tensor
    lengths: torch.Tensor
    unknown: Counter[str]


class TextEncoder:
    """Turns texts into ids with a named tokenizer and, for "char", "pinyin" and "ipa", a vocab.

    Args:
        tokenizer: "char", "byte", "pinyin" or "ipa[:<language>]" (see `f5lite.text.tokenizers`).
        vocab: The token table; required for "char", "pinyin" and "ipa", not accepted for "byte" (whose ids are
            bytes).

    Raises:
        ValueError: Unknown tokenizer name or ipa language, or a vocab missing (char, pinyin, ipa) or given (byte).
        ImportError: "pinyin" without the `zh` extra installed, "ipa" without the `ipa` extra or espeak-ng.
    """

    def __init__(self, tokenizer: str, vocab: Vocab | None = None) -> None:
        self._tokenize = get_tokenizer(tokenizer)
        if uses_vocab(tokenizer) and vocab is None:
            raise ValueError(f"the {tokenizer!r} tokenizer needs a vocab (load one with f5lite.text.load_vocab)")
        if not uses_vocab(tokenizer) and vocab is not None:
            raise ValueError(f"the {tokenizer!r} tokenizer takes no vocab: its ids are UTF-8 bytes (0..255)")
        self._name = tokenizer
        self._vocab = vocab

    @property
    def tokenizer(self) -> str:
        """The tokenizer name."""
        return self._name

    @property
    def vocab(self) -> Vocab | None:
        """The vocab, or None for the byte tokenizer."""
        return self._vocab

    @property
    def num_embeds(self) -> int:
        """Number of distinct ids: the vocab size, or 256 for bytes. This is the model's `text_num_embeds`."""
        return BYTE_NUM_EMBEDS if self._vocab is None else len(self._vocab)

    def tokenize(self, text: str) -> list[str]:
        """Split one text into tokens (for "byte", into characters; each becomes its UTF-8 bytes when encoded).

        Args:
            text: A raw text.

        Returns:
            Its tokens.
        """
        return self._tokenize(text)

    def encode(self, texts: Sequence[str | Sequence[str]]) -> EncodedText:
        """Tokenize a batch and map it to ids, padded to a rectangle.

        Tokens missing from the vocab become id 0, as in F5-TTS; they are returned in `unknown`, and one warning
        per batch lists them.

        Args:
            texts: `b` items, each a raw text (tokenized here) or an already tokenized list of tokens (used as
                is, like F5-TTS's pinyin datasets prepared offline; for "byte", each token's UTF-8 bytes in turn).

        Returns:
            The ids `[b, nt]`, lengths `[b]` and unknown-token counts.

        Raises:
            TypeError: `texts` is a single string, or a tokenized item holds something other than strings.
            ValueError: `texts` is empty.
        """
        if isinstance(texts, str):
            raise TypeError("encode takes a batch of texts; wrap a single text in a list")
        if len(texts) == 0:
            raise ValueError("cannot encode an empty batch")
        unknown: Counter[str] = Counter()
        rows = [self._to_ids(self._tokens_of(item), unknown) for item in texts]
        ids, lengths = pad_ids(rows)
        if unknown and self._vocab is not None:
            _warn_unknown(unknown, self._vocab.source)
        return EncodedText(ids=ids, lengths=lengths, unknown=unknown)

    def ids(self, item: str | Sequence[str]) -> list[int]:
        """One text (raw, or already tokenized) as ids; unknown tokens become id 0 and are warned about."""
        unknown: Counter[str] = Counter()
        row = self._to_ids(self._tokens_of(item), unknown)
        if unknown and self._vocab is not None:
            _warn_unknown(unknown, self._vocab.source)
        return row

    def length(self, text: str) -> int:
        """How many ids one text becomes (bytes for "byte", tokens otherwise), unknown tokens counted silently.

        This is what a model's lower bound on a sample's frames counts (a frame per text id).
        """
        tokens = self._tokenize(text)
        return len(tokens) if self._vocab is not None else sum(len(token.encode("utf-8")) for token in tokens)

    def _tokens_of(self, item: str | Sequence[str]) -> list[str]:
        if isinstance(item, str):
            return self._tokenize(item)
        tokens = list(item)
        bad = next((token for token in tokens if not isinstance(token, str)), None)
        if bad is not None:
            raise TypeError(f"a tokenized text must be a sequence of str tokens; got {type(bad).__name__} {bad!r}")
        return tokens

    def _to_ids(self, tokens: list[str], unknown: Counter[str]) -> list[int]:
        if self._vocab is None:
            return [byte for token in tokens for byte in token.encode("utf-8")]
        lookup = self._vocab.token_to_id
        row = []
        for token in tokens:
            token_id = lookup.get(token)
            if token_id is None:
                unknown[token] += 1
                token_id = UNKNOWN_ID
            row.append(token_id)
        return row


def pad_ids(rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids as a right-padded `[b, nt]` int64 tensor (-1 padding, `nt` at least 1) and their lengths `[b]`."""
    ids = torch.full((len(rows), max(1, *map(len, rows))), PAD_ID, dtype=torch.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.int64)
    return ids, torch.tensor([len(row) for row in rows], dtype=torch.int64)


def _warn_unknown(unknown: Counter[str], vocab_source: str) -> None:
    listed = ", ".join(f"{token!r} x{count}" for token, count in unknown.most_common(_MAX_LISTED_UNKNOWN))
    if len(unknown) > _MAX_LISTED_UNKNOWN:
        listed += f", and {len(unknown) - _MAX_LISTED_UNKNOWN} more distinct tokens"
    logger.warning(
        "%d token(s) not in vocab %s were mapped to id %d (the space, as F5-TTS does): %s",
        sum(unknown.values()),
        vocab_source,
        UNKNOWN_ID,
        listed,
    )

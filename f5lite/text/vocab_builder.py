"""The vocab of a prepared dataset: built from its text, or a pretrained vocab extended without moving any id.

A model fine-tuned from pretrained weights must see every old token at its old id, so new tokens are only ever
appended after the pretrained ones, in code point order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from f5lite.text.vocab import SPACE, Vocab


@dataclass(frozen=True)
class VocabResult:
    """The vocab to write and what it took to get it.

    Attributes:
        tokens: The vocab's tokens in id order (space first).
        added: Tokens appended to the base vocab (empty without a base, or with `fixed`).
        missing: Every token of the data missing from the base vocab, with its number of occurrences (empty
            without a base).
    """

    tokens: tuple[str, ...]
    added: tuple[str, ...]
    missing: Counter[str]


def build_vocab(token_lists: Iterable[Iterable[str]], base: Vocab | None = None, *, fixed: bool = False) -> VocabResult:
    """Make the vocab for the given tokenized texts.

    Args:
        token_lists: The tokens of every kept text.
        base: A pretrained vocab to keep; None builds the vocab from the data alone (space first, then every
            other token in code point order).
        fixed: With a base, do not add tokens: the caller skips the texts that hold missing tokens.

    Returns:
        The tokens to write, the tokens added and the missing-token counts.
    """
    counts: Counter[str] = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    if base is None:
        return VocabResult((SPACE, *sorted(set(counts) - {SPACE})), (), Counter())
    missing = Counter({token: n for token, n in counts.items() if token not in base})
    added = () if fixed else tuple(sorted(missing))
    return VocabResult((*base.tokens, *added), added, missing)

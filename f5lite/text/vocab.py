r"""Token vocabularies in F5-TTS's `vocab.txt` format: one token per line, the line index is the token id.

Ids must match what F5-TTS computes from the same file, because f5lite loads F5-TTS's weights. F5-TTS reads the
file in text mode (universal newlines: a line ends at "\n", "\r\n" or a lone "\r") and drops each line's last
character. This loader reproduces those ids and refuses the files F5-TTS would misread or reject, with two
deliberate differences: a last line without a trailing newline keeps its full token (F5-TTS would lose its last
character, so a warning says so), and a UTF-8 byte order mark is skipped (F5-TTS would glue it to the space token).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

logger = logging.getLogger(__name__)

SPACE = " "
"""The token every vocab must have at id 0: F5-TTS maps unknown tokens to id 0 and asserts that it is the space."""

# Exactly the line breaks of Python's text-mode reading (what F5-TTS uses). str.splitlines would also break at
# \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029, which can be real tokens.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Vocab:
    """An ordered token table: `tokens[i]` has id `i`, and `vocab[token]` gives the id F5-TTS would use.

    Duplicate tokens are kept as rows (the table size, and so the embedding size, counts them) but only the last
    occurrence is reachable by lookup, as in F5-TTS's dict-based map. They are logged as a warning, never silently.

    Args:
        tokens: The tokens in id order. The space must be the token with id 0.
        source: What to name in messages (the file path for loaded vocabs).

    Raises:
        ValueError: `tokens` is empty, or the id of the space is not 0 (missing, not first, or repeated later).
    """

    def __init__(self, tokens: Iterable[str], *, source: str = "<in-memory vocab>") -> None:
        self._tokens = tuple(tokens)
        self._source = source
        if not self._tokens:
            raise ValueError(f"{source}: the vocab has no tokens")
        ids: dict[str, int] = {}
        seen_at: dict[str, list[int]] = {}
        for i, token in enumerate(self._tokens):
            ids[token] = i
            seen_at.setdefault(token, []).append(i)
        self._ids = ids
        self._duplicates = {token: tuple(at) for token, at in seen_at.items() if len(at) > 1}
        space_id = ids.get(SPACE)
        if space_id != 0:
            found = "there is no space token" if space_id is None else f"the space has id {space_id}"
            raise ValueError(
                f"{source}: the space ' ' must have id 0 (be the first line, and only there), because unknown "
                f"tokens are mapped to id 0; here {found}, and id 0 is {self._tokens[0]!r}"
            )
        if self._duplicates:
            listed = ", ".join(f"{token!r} at ids {list(at)}" for token, at in self._duplicates.items())
            logger.warning(
                "%s: duplicate tokens: %s. As in F5-TTS each one maps to its last id; the earlier rows stay in the "
                "table (and count in its size) but are never used.",
                source,
                listed,
            )

    @property
    def tokens(self) -> tuple[str, ...]:
        """All tokens in id order, duplicates included."""
        return self._tokens

    @property
    def token_to_id(self) -> Mapping[str, int]:
        """Read-only map from token to id (for a duplicated token, its last id)."""
        return MappingProxyType(self._ids)

    @property
    def duplicates(self) -> Mapping[str, tuple[int, ...]]:
        """Tokens that occur more than once, with every id they occupy."""
        return MappingProxyType(self._duplicates)

    @property
    def source(self) -> str:
        """Where the vocab came from, as named in messages."""
        return self._source

    def __len__(self) -> int:
        """Number of rows (the model's `text_num_embeds`), duplicates included."""
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        """Whether `token` has an id."""
        return token in self._ids

    def __getitem__(self, token: str) -> int:
        """The id of `token`; raises KeyError when it has none."""
        return self._ids[token]

    def __iter__(self) -> Iterator[str]:
        """The tokens in id order."""
        return iter(self._tokens)

    def __repr__(self) -> str:
        """Short summary (the full table can have thousands of rows)."""
        return f"Vocab({len(self)} tokens from {self._source})"


def load_vocab(path: str | os.PathLike[str]) -> Vocab:
    """Read a `vocab.txt` (LF or CRLF endings, optional UTF-8 byte order mark) into a `Vocab`.

    Args:
        path: The vocab file.

    Returns:
        The vocab, with the ids F5-TTS would give the same file.

    Raises:
        ValueError: The file is missing or unreadable, not UTF-8, empty, or its space token is not at id 0. The
            message names the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read vocab file {path}: {err.strerror or err}") from err
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"vocab file {path} is not UTF-8: undecodable byte at offset {err.start}") from err
    if not text:
        raise ValueError(f"vocab file {path} is empty")
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()  # the empty remainder after the final line break, not a token
    else:
        logger.warning(
            "vocab file %s does not end with a newline: its last token is read as %r, but F5-TTS would read %r",
            path,
            lines[-1],
            lines[-1][:-1],
        )
    return Vocab(lines, source=str(path))


def write_vocab(path: str | os.PathLike[str], tokens: Iterable[str]) -> None:
    r"""Write tokens as a `vocab.txt` that both `load_vocab` and F5-TTS read back with the same ids.

    The file is UTF-8 without byte order mark, with LF endings and a final newline.

    Args:
        path: The file to create or overwrite (its folder must exist).
        tokens: The tokens in id order (a `Vocab` works too). The space must be first.

    Raises:
        ValueError: The tokens do not form a valid vocab (see `Vocab`), or a token contains a line break
            ("\n" or "\r"), which the line-based format cannot hold.
    """
    vocab = Vocab(tokens, source=str(path))
    for i, token in enumerate(vocab.tokens):
        if "\n" in token or "\r" in token:
            raise ValueError(f"{path}: token {token!r} (id {i}) contains a line break and cannot be written")
    Path(path).write_bytes(("\n".join(vocab.tokens) + "\n").encode("utf-8"))


def vocab_hash(vocab: Vocab | None) -> str | None:
    """sha256 of a vocab's tokens in order (None for the byte tokenizer): the text ids' meaning."""
    if vocab is None:
        return None
    return hashlib.sha256("\n".join(vocab.tokens).encode("utf-8")).hexdigest()

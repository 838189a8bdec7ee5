"""vocab.txt reading and writing: ids must equal F5-TTS's line indices, and bad files must fail loudly."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from f5lite.text import Vocab, load_vocab, write_vocab

# The fixture: the first 40 lines of F5-TTS's released vocab.txt.
FIXTURE_TOKENS = [" ", *"!\"#$%&'()*+,-./", *"0123456789", *":;=>?@", *"ABCDEFGH"]


def _write(tmp_path: Path, data: bytes, name: str = "vocab.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_fixture_vocab_ids_are_line_indices(assets: Path) -> None:
    vocab = load_vocab(assets / "f5tts_compat" / "vocab.txt")
    assert len(vocab) == 40
    assert list(vocab.tokens) == FIXTURE_TOKENS
    assert vocab[" "] == 0
    assert all(vocab[token] == i for i, token in enumerate(FIXTURE_TOKENS))
    assert "A" in vocab and "I" not in vocab
    assert not vocab.duplicates


def test_crlf_endings_give_the_same_tokens(assets: Path, tmp_path: Path) -> None:
    lf = (assets / "f5tts_compat" / "vocab.txt").read_bytes()
    crlf = _write(tmp_path, lf.replace(b"\n", b"\r\n"))
    assert load_vocab(crlf).tokens == tuple(FIXTURE_TOKENS)


def test_lone_cr_ends_a_line_as_in_f5tts_text_mode(tmp_path: Path) -> None:
    # Python's text mode (what F5-TTS reads with) treats a lone "\r" as a line break too.
    vocab = load_vocab(_write(tmp_path, b" \ra\r\nb\n"))
    assert vocab.tokens == (" ", "a", "b")


def test_missing_trailing_newline_keeps_the_last_token_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="f5lite.text"):
        vocab = load_vocab(_write(tmp_path, b" \na\nba1"))
    assert vocab.tokens == (" ", "a", "ba1")
    assert "newline" in caplog.text and "'ba'" in caplog.text  # what F5-TTS would read instead


def test_tokens_that_splitlines_would_break_stay_whole(tmp_path: Path) -> None:
    tokens = [" ", "a\x1cb", "\u2028", "x\x0by\x0c", "\x85"]
    vocab = load_vocab(_write(tmp_path, "\n".join(tokens).encode() + b"\n"))
    assert list(vocab.tokens) == tokens
    assert vocab["\u2028"] == 2


def test_spaces_inside_tokens_are_kept(tmp_path: Path) -> None:
    vocab = load_vocab(_write(tmp_path, b" \n a \nb  \n"))
    assert vocab.tokens == (" ", " a ", "b  ")


def test_utf8_bom_is_skipped(tmp_path: Path) -> None:
    vocab = load_vocab(_write(tmp_path, b"\xef\xbb\xbf \na\n"))
    assert vocab.tokens == (" ", "a")


def test_non_ascii_tokens_decode_as_utf8(tmp_path: Path) -> None:
    vocab = load_vocab(_write(tmp_path, " \nba1\né\n。\n".encode()))
    assert vocab["。"] == 3 and vocab["é"] == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a\n \n", "id 0"),  # space not first
        (b"a\nb\n", "no space"),
        (b"", "empty"),
        (b"\xef\xbb\xbf", "empty"),
        (b" \n\xff\xfe\n", "not UTF-8"),
    ],
)
def test_invalid_files_raise_naming_the_file(tmp_path: Path, data: bytes, message: str) -> None:
    path = _write(tmp_path, data, name="bad_vocab.txt")
    with pytest.raises(ValueError, match=message) as excinfo:
        load_vocab(path)
    assert str(path) in str(excinfo.value)


def test_missing_file_raises_value_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "vocab.txt"
    with pytest.raises(ValueError, match="cannot read") as excinfo:
        load_vocab(path)
    assert str(path) in str(excinfo.value)


def test_space_repeated_later_is_rejected(tmp_path: Path) -> None:
    # F5-TTS's map would give the space the later id, and its `vocab[" "] == 0` assertion would fail.
    with pytest.raises(ValueError, match="space has id 2"):
        load_vocab(_write(tmp_path, b" \na\n \n"))


def test_duplicates_warn_and_the_last_id_wins(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="f5lite.text"):
        vocab = load_vocab(_write(tmp_path, b" \na\nb\na\n"))
    assert len(vocab) == 4  # every row counts: the embedding table has a row per line
    assert vocab["a"] == 3
    assert dict(vocab.duplicates) == {"a": (1, 3)}
    assert "duplicate" in caplog.text and "'a' at ids [1, 3]" in caplog.text


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    tokens = [" ", "a", "ba1", "é", "。", "\u2028", "", "x y"]
    path = tmp_path / "vocab.txt"
    write_vocab(path, tokens)
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\r" not in data and not data.startswith(b"\xef\xbb\xbf")
    assert list(load_vocab(path).tokens) == tokens


def test_write_accepts_a_vocab(assets: Path, tmp_path: Path) -> None:
    source = assets / "f5tts_compat" / "vocab.txt"
    write_vocab(tmp_path / "copy.txt", load_vocab(source))
    assert (tmp_path / "copy.txt").read_bytes() == source.read_bytes()


@pytest.mark.parametrize("bad", ["a\nb", "a\r"])
def test_write_rejects_tokens_with_line_breaks(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="line break"):
        write_vocab(tmp_path / "vocab.txt", [" ", bad])
    assert not (tmp_path / "vocab.txt").exists()


def test_write_rejects_a_vocab_without_leading_space(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="id 0"):
        write_vocab(tmp_path / "vocab.txt", ["a", " "])


def test_in_memory_vocab_needs_tokens() -> None:
    with pytest.raises(ValueError, match="no tokens"):
        Vocab([])

"""Texts to ids: the fixture ids produced by F5-TTS itself, padding, unknown-token reporting, byte mode."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest
import torch

from f5lite.text import EncodedText, TextEncoder, Vocab, load_vocab

# Ids copied from the F5-TTS compatibility fixtures (tests/assets/f5tts_compat, F5-TTS commit 2ae2c9b), built by
# F5-TTS's `list_str_to_idx` with the fixture vocab.txt ("custom" tokenizer: each character looked up as is).
# dit_tiny.io.safetensors, key `text` (2, 44): json io.text_strings.
IO_TEXTS = ["BAD CAFE, 42 BEEF! (HEAD-FED)", "ACE 7: DAB? x=1.5% #9 @GH + \"FADE\" 'CAB' 0/8"]
IO_IDS = [
    [33, 32, 35, 0, 34, 32, 37, 36, 12, 0, 20, 18, 0, 33, 36, 36, 37, 1, 0, 8, 39, 36, 32, 35, 13, 37, 36, 35, 9]
    + [-1] * 15,
    [32, 34, 36, 0, 23, 26, 0, 35, 32, 33, 30, 0, 0, 28, 17, 14, 21, 5, 0, 3, 25, 0]
    + [31, 38, 39, 0, 11, 0, 2, 37, 32, 35, 36, 2, 0, 7, 34, 32, 33, 7, 0, 16, 15, 24],
]
# dit_tiny.sample.safetensors, key `s3_text` (2, 25): the texts CFM.sample got as a list of strings (json sample.cases.s3).
SAMPLE_TEXTS = ["ABC 12. DEAF CAB, 7 HEAD!", "HI, 7 FED A BEE 8 EGGS?"]
SAMPLE_IDS = [
    [32, 33, 34, 0, 17, 18, 14, 0, 35, 36, 32, 37, 0, 34, 32, 33, 12, 0, 23, 0, 39, 36, 32, 35, 1],
    [39, 0, 12, 0, 23, 0, 37, 36, 35, 0, 32, 0, 33, 36, 36, 0, 24, 0, 36, 38, 38, 0, 30, -1, -1],
]


@pytest.fixture
def vocab(assets: Path) -> Vocab:
    return load_vocab(assets / "f5tts_compat" / "vocab.txt")


def test_char_ids_match_f5tts_fixture(vocab: Vocab, caplog: pytest.LogCaptureFixture) -> None:
    encoder = TextEncoder("char", vocab)
    with caplog.at_level(logging.WARNING, logger="f5lite.text"):
        out = encoder.encode(IO_TEXTS)
    assert out.ids.dtype == torch.int64 and out.lengths.dtype == torch.int64
    assert out.ids.tolist() == IO_IDS
    assert out.lengths.tolist() == [29, 44]
    assert out.unknown == Counter({"x": 1})
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "'x' x1" in warnings[0].getMessage()


def test_sample_ids_match_f5tts_fixture(vocab: Vocab) -> None:
    out = TextEncoder("char", vocab).encode(SAMPLE_TEXTS)
    assert out.ids.tolist() == SAMPLE_IDS
    assert out.unknown == Counter({"I": 1, "S": 1})


def test_pinyin_tokenizer_gives_the_same_ids_on_the_sample_texts(vocab: Vocab) -> None:
    pytest.importorskip("jieba")
    pytest.importorskip("pypinyin")
    # F5-TTS's inference runs the pinyin conversion; on these texts every multi-character ASCII segment already
    # follows a space, so it adds nothing and the ids are the fixture's.
    assert TextEncoder("pinyin", vocab).encode(SAMPLE_TEXTS).ids.tolist() == SAMPLE_IDS


def test_num_embeds(vocab: Vocab) -> None:
    assert TextEncoder("char", vocab).num_embeds == 40
    assert TextEncoder("byte").num_embeds == 256


def test_padding_and_lengths(vocab: Vocab) -> None:
    out = TextEncoder("char", vocab).encode(["AB", "", "ABCD"])
    assert out.ids.tolist() == [[32, 33, -1, -1], [-1, -1, -1, -1], [32, 33, 34, 35]]
    assert out.lengths.tolist() == [2, 0, 4]
    assert out.unknown == Counter()


def test_all_empty_batch_keeps_one_padding_column(vocab: Vocab) -> None:
    out = TextEncoder("char", vocab).encode(["", ""])
    assert out.ids.shape == (2, 1)
    assert out.ids.tolist() == [[-1], [-1]]
    assert out.lengths.tolist() == [0, 0]


def test_pretokenized_input_is_used_as_is(vocab: Vocab) -> None:
    # As for F5-TTS pinyin datasets converted offline: multi-character tokens are looked up whole.
    out = TextEncoder("char", vocab).encode([[" ", "ba1", "A"], "AB"])
    assert out.ids.tolist() == [[0, 0, 32], [32, 33, -1]]
    assert out.unknown == Counter({"ba1": 1})


def test_unknown_tokens_are_counted_across_the_batch(vocab: Vocab, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="f5lite.text"):
        out = TextEncoder("char", vocab).encode(["xxA", "Zx"])
    assert out.unknown == Counter({"x": 3, "Z": 1})
    assert out.ids.tolist() == [[0, 0, 32], [0, 0, -1]]
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "4 token(s)" in message and "'x' x3" in message and "'Z' x1" in message


def test_known_batch_logs_nothing(vocab: Vocab, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="f5lite.text"):
        TextEncoder("char", vocab).encode(["A B"])
    assert not caplog.records


def test_byte_ids_are_utf8_bytes() -> None:
    out = TextEncoder("byte").encode(["é", "A 你"])
    assert out.ids.tolist() == [[195, 169, -1, -1, -1], [65, 32, 228, 189, 160]]
    assert out.lengths.tolist() == [2, 5]
    assert out.unknown == Counter()


def test_byte_pretokenized_tokens_are_utf8_encoded_in_turn() -> None:
    assert TextEncoder("byte").encode([["ni3", "é"]]).ids.tolist() == [[110, 105, 51, 195, 169]]


def test_tokenize(vocab: Vocab) -> None:
    assert TextEncoder("char", vocab).tokenize("a é") == ["a", " ", "é"]
    assert TextEncoder("byte").tokenize("é") == ["é"]


def test_result_type(vocab: Vocab) -> None:
    assert isinstance(TextEncoder("char", vocab).encode(["A"]), EncodedText)


def test_empty_batch_is_rejected(vocab: Vocab) -> None:
    with pytest.raises(ValueError, match="empty batch"):
        TextEncoder("char", vocab).encode([])


def test_single_string_is_rejected(vocab: Vocab) -> None:
    with pytest.raises(TypeError, match="batch"):
        TextEncoder("char", vocab).encode("AB")


def test_non_string_tokens_are_rejected(vocab: Vocab) -> None:
    with pytest.raises(TypeError, match="str tokens"):
        TextEncoder("char", vocab).encode([["A", 3]])  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["char", "pinyin"])
def test_vocab_tokenizers_need_a_vocab(name: str) -> None:
    if name == "pinyin":
        pytest.importorskip("jieba")
        pytest.importorskip("pypinyin")
    with pytest.raises(ValueError, match="needs a vocab"):
        TextEncoder(name)


def test_byte_tokenizer_refuses_a_vocab(vocab: Vocab) -> None:
    with pytest.raises(ValueError, match="takes no vocab"):
        TextEncoder("byte", vocab)

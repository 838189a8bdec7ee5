"""F5-TTS's `convert_char_to_pinyin`, reproduced token for token.

The expected lists were derived by hand from F5-TTS's algorithm, given jieba 0.42's segmentation (shown in each
comment) and pypinyin's TONE3 syllables with tone sandhi.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jieba")
pytest.importorskip("pypinyin")

from f5lite.text import convert_char_to_pinyin, pinyin_tokenize  # noqa: E402


def test_mixed_chinese_english_sentence() -> None:
    # Segments: 你好 | , | world | ! | " " | 我们 | 的 | F5 | - | TTS | 模型 | 。
    # 你好: sandhi 3-3 -> ni2 hao3, each Chinese char preceded by " ". "world" and "F5" and "TTS" are multi-char
    # ASCII after a token that is not space/:/'/", so each gets a " " first. The lone " " segment is kept, so
    # two spaces precede wo3. 的 has the neutral tone: "de", no digit. "。" (U+3002) is below F5-TTS's Chinese
    # range, so it is kept as is without a space.
    expected = [" ", "ni2", " ", "hao3", ","]
    expected += [" ", "w", "o", "r", "l", "d", "!", " "]
    expected += [" ", "wo3", " ", "men", " ", "de"]
    expected += [" ", "F", "5", "-", " ", "T", "T", "S"]
    expected += [" ", "mo2", " ", "xing2", "。"]
    assert pinyin_tokenize("你好,world! 我们的F5-TTS模型。") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # hello | " " | world: the previous token is a space, so none is added.
        ("hello world", ["h", "e", "l", "l", "o", " ", "w", "o", "r", "l", "d"]),
        # 你好 | world: multi-char ASCII after a syllable gets a space.
        ("你好world", [" ", "ni2", " ", "hao3", " ", "w", "o", "r", "l", "d"]),
        # 你 | a: a one-character ASCII segment never gets one.
        ("你a", [" ", "ni3", "a"]),
        # a | : | bc, " | ok | ", ' | ok | ': no space after ":", '"' or "'".
        ("a:bc", ["a", ":", "b", "c"]),
        ('"ok"', ['"', "o", "k", '"']),
        ("'ok'", ["'", "o", "k", "'"]),
        # The first segment never gets a space before it.
        ("OK", ["O", "K"]),
    ],
)
def test_space_before_multi_char_ascii_segments(text: str, expected: list[str]) -> None:
    assert pinyin_tokenize(text) == expected


def test_semicolon_and_curly_quotes_are_translated() -> None:
    assert pinyin_tokenize("x;y") == ["x", ",", "y"]
    # 好 | , | " | 对 | " | ' | 是 | ' after translation.
    expected = [" ", "hao3", ",", '"', " ", "dui4", '"', "'", " ", "shi4", "'"]
    assert pinyin_tokenize("好;“对”‘是’") == expected


def test_mixed_segment_is_converted_per_character() -> None:
    # jieba keeps the dictionary word "T恤" as one segment: neither pure ASCII nor all 3-byte, so per character.
    assert pinyin_tokenize("T恤很好") == ["T", " ", "xu4", " ", "hen3", " ", "hao3"]
    # caf | é | 😀: "é" (2 bytes, < 256) and the emoji (4 bytes) are kept as they are.
    assert pinyin_tokenize("café😀") == ["c", "a", "f", "é", "😀"]


def test_polyphone_off_converts_characters_alone() -> None:
    # Without the word context there is no tone sandhi: 你好 -> ni3 hao3, 一个 -> yi1 ge4.
    assert convert_char_to_pinyin(["你好", "一个"], polyphone=False) == [
        [" ", "ni3", " ", "hao3"],
        [" ", "yi1", " ", "ge4"],
    ]
    assert convert_char_to_pinyin(["一个"]) == [[" ", "yi2", " ", "ge4"]]


def test_batch_and_empty_text() -> None:
    assert convert_char_to_pinyin(["", "A"]) == [[], ["A"]]

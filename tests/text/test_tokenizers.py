"""Tokenizer selection by name, and the import-free behaviour without the `zh` and `ipa` extras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from f5lite.text import TOKENIZER_NAMES, char_tokenize, get_tokenizer


def test_names() -> None:
    assert TOKENIZER_NAMES == ("char", "byte", "pinyin", "ipa")


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="'char', 'byte', 'pinyin', 'ipa'") as excinfo:
        get_tokenizer("bpe")
    assert "'bpe'" in str(excinfo.value)


def test_char_splits_code_points() -> None:
    # "e" + combining acute is two code points, so two tokens (like F5-TTS, which iterates over the str).
    assert char_tokenize("ab e\u0301") == ["a", "b", " ", "e", "\u0301"]
    assert get_tokenizer("char")("你好") == ["你", "好"]


def test_pinyin_without_zh_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import jieba` fail as if it were not installed.
    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(ImportError, match=r"pip install 'f5lite\[zh\]'") as excinfo:
        get_tokenizer("pinyin")
    assert "jieba" in str(excinfo.value)


def test_pinyin_without_pypinyin_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypinyin", None)
    with pytest.raises(ImportError, match=r"f5lite\[zh\].*") as excinfo:
        get_tokenizer("pinyin")
    assert "pypinyin" in str(excinfo.value)


def test_f5lite_text_imports_and_encodes_without_zh_extra(assets: Path) -> None:
    # A fresh interpreter, so that nothing imported by other tests hides an eager import of jieba, pypinyin or
    # phonemizer.
    script = f"""
import sys
sys.modules["jieba"] = None
sys.modules["pypinyin"] = None
sys.modules["phonemizer"] = None
from f5lite.text import TextEncoder, load_vocab
vocab = load_vocab({str(assets / "f5tts_compat" / "vocab.txt")!r})
assert TextEncoder("char", vocab).encode(["AB"]).ids.tolist() == [[32, 33]]
try:
    TextEncoder("pinyin", vocab)
except ImportError as err:
    assert "f5lite[zh]" in str(err), err
else:
    raise AssertionError("pinyin worked without jieba")
try:
    TextEncoder("ipa", vocab)
except ImportError as err:
    assert "f5lite[ipa]" in str(err), err
else:
    raise AssertionError("ipa worked without phonemizer")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr

"""Text front end: vocab files, tokenizers (char, byte, F5-TTS pinyin, espeak-ng IPA) and batch encoding to ids.

The ids match F5-TTS's for the same vocab file and text, so that official F5-TTS weights can be used.
"""

from f5lite.text.encode import PAD_ID, UNKNOWN_ID, EncodedText, TextEncoder
from f5lite.text.ipa import IPA_INSTALL_HINT, ipa_tokenize, ipa_transcribe
from f5lite.text.pinyin import ZH_INSTALL_HINT, convert_char_to_pinyin, pinyin_tokenize
from f5lite.text.tokenizers import (
    TOKENIZER_NAMES,
    Tokenizer,
    char_tokenize,
    check_tokenizer_name,
    get_tokenizer,
    uses_vocab,
)
from f5lite.text.vocab import SPACE, Vocab, load_vocab, write_vocab

__all__ = [
    "IPA_INSTALL_HINT",
    "PAD_ID",
    "SPACE",
    "TOKENIZER_NAMES",
    "UNKNOWN_ID",
    "ZH_INSTALL_HINT",
    "EncodedText",
    "TextEncoder",
    "Tokenizer",
    "Vocab",
    "char_tokenize",
    "check_tokenizer_name",
    "convert_char_to_pinyin",
    "get_tokenizer",
    "ipa_tokenize",
    "ipa_transcribe",
    "load_vocab",
    "pinyin_tokenize",
    "uses_vocab",
    "write_vocab",
]

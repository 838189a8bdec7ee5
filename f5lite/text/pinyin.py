"""F5-TTS's pinyin conversion (`convert_char_to_pinyin`): Chinese characters become toned pinyin syllables.

The released F5-TTS models were trained on this tokenization, and F5-TTS runs it on every inference text, English
included, so it must be reproduced exactly. It needs the optional `zh` extra (jieba for word segmentation, pypinyin
for the syllables); both are imported only when a pinyin tokenizer is used, so f5lite imports without them.

F5-TTS segments with rjieba (the Rust port of jieba), which cannot be installed here; this module uses jieba. Both
use jieba's dictionary and HMM, but their segmentations may differ on some texts. Segmentation matters in two
places: whether a space token is inserted before a multi-character ASCII segment, and the context that pypinyin's
tone sandhi and polyphone choices see.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

ZH_INSTALL_HINT = "pip install 'f5lite[zh]'"

# F5-TTS maps these before segmenting so that the pinyin vocab covers them (its comment: "to address oov").
_F5_TRANSLATION = str.maketrans({";": ",", "“": '"', "”": '"', "‘": "'", "’": "'"})

# A multi-character ASCII segment gets a space token before it unless the previous token is one of these.
_NO_SPACE_AFTER = frozenset({" ", ":", "'", '"'})


def _is_chinese(char: str) -> bool:
    # F5-TTS's range: Bopomofo through the CJK Unified Ideographs (CJK punctuation such as "。" is below it).
    return "\u3100" <= char <= "\u9fff"


def load_zh_backend() -> tuple[Callable[[str], Iterable[str]], Callable[[str], list[str]]]:
    """Import jieba and pypinyin and get them ready, or explain how to install them.

    jieba's dictionary is loaded here, once per process, with its logger quieted as F5-TTS does, so that the
    first encoded batch does not pay for it and no "Building prefix dict" lines appear.

    Returns:
        `(segment, to_pinyin)`: jieba's word segmentation (`jieba.cut`) and pypinyin's `lazy_pinyin` in F5-TTS's
        settings (TONE3 style, tone sandhi), each taking a string.

    Raises:
        ImportError: jieba or pypinyin is not installed; the message says to `pip install 'f5lite[zh]'`.
    """
    try:
        import jieba
        from pypinyin import Style, lazy_pinyin
    except ImportError as err:
        raise ImportError(
            f"the pinyin tokenizer needs jieba and pypinyin, which are not installed (missing module: {err.name}); "
            f"install the Chinese extra with: {ZH_INSTALL_HINT}"
        ) from err
    if not jieba.dt.initialized:
        jieba.default_logger.setLevel(logging.CRITICAL)
        jieba.initialize()

    def to_pinyin(text: str) -> list[str]:
        result: list[str] = lazy_pinyin(text, style=Style.TONE3, tone_sandhi=True)
        return result

    return jieba.cut, to_pinyin


def convert_char_to_pinyin(texts: Iterable[str], polyphone: bool = True) -> list[list[str]]:
    """Tokenize texts exactly as F5-TTS's `convert_char_to_pinyin` does (with jieba in place of rjieba).

    Per text: `;` becomes `,` and curly quotes become straight ones; then each jieba segment is handled by kind.
    A pure-ASCII segment contributes its characters, preceded by a space token when it is longer than one
    character, the output is non-empty and the previous token is not a space, `:`, `'` or `"`. A segment of
    3-byte UTF-8 characters (when `polyphone`) contributes pypinyin's syllables for the whole segment, each
    Chinese character's syllable preceded by a space token. Any other segment is handled per character:
    Latin-1 characters as they are, Chinese characters as a space token plus their syllable, others as they are.

    Args:
        texts: Raw texts.
        polyphone: Convert whole CJK words at once, so that pypinyin picks readings and tone sandhi from the
            word. F5-TTS always uses True.

    Returns:
        One token list per text: single characters, " ", or pinyin syllables such as "ni3" (a neutral tone has
        no digit: "de").

    Raises:
        ImportError: The `zh` extra (jieba, pypinyin) is not installed.
    """
    segment, to_pinyin = load_zh_backend()
    converted: list[list[str]] = []
    for text in texts:
        tokens: list[str] = []
        for seg in segment(text.translate(_F5_TRANSLATION)):
            n_bytes = len(seg.encode("utf-8"))
            if n_bytes == len(seg):
                if tokens and len(seg) > 1 and tokens[-1] not in _NO_SPACE_AFTER:
                    tokens.append(" ")
                tokens.extend(seg)
            elif polyphone and n_bytes == 3 * len(seg):
                syllables = to_pinyin(seg)
                # F5-TTS indexes the syllables by character position; were pypinyin ever to merge characters,
                # fail loudly rather than shift every later syllable.
                for char, syllable in zip(seg, syllables, strict=True):
                    if _is_chinese(char):
                        tokens.append(" ")
                    tokens.append(syllable)
            else:
                for char in seg:
                    if ord(char) < 256:
                        tokens.append(char)
                    elif _is_chinese(char):
                        tokens.append(" ")
                        tokens.extend(to_pinyin(char))
                    else:
                        tokens.append(char)
        converted.append(tokens)
    return converted


def pinyin_tokenize(text: str) -> list[str]:
    """Tokenize one text with `convert_char_to_pinyin` (see there).

    Args:
        text: A raw text.

    Returns:
        Its tokens.
    """
    return convert_char_to_pinyin([text])[0]

"""A recogniser vocabulary for `asr=pocketsphinx:<dir>`: an n-gram LM and a dictionary from training sentences.

The vocabulary is a back-off n-gram language model and a pronunciation dictionary. PocketSphinx's shipped model (a 130k-word general English LM) hears little of synthetic speech: `make demo`'s own
ground-truth recordings score a WER of about 0.8 with it. A corpus whose sentences come from a known vocabulary
(`scripts/make_speak_corpus.py`) gets a recogniser restricted to it: the dictionary keeps only the pronunciations of
the words its training sentences use, and the LM is estimated from those sentences. Fair only when built from the
training text alone, never from the held-out sentences that are scored; the same directory then scores the ground
truth and every model, so the floor and the model's numbers stay comparable.

The LM is written in ARPA format: maximum-likelihood unigrams over the training words and `</s>`, and for every
higher order absolute discounting (each seen n-gram's count less `discount`) with the freed mass handed to the
next lower order through a back-off weight, computed so that every history's distribution sums to one (Katz-style
back-off). No smoothing towards unseen words: the dictionary holds no word the LM has not seen.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from f5lite.atomic import write_text_atomic
from f5lite.metrics.backend import EVAL_EXTRA, require
from f5lite.metrics.textnorm import normalize_text

LM_FILE = "lm.arpa"
"""The language model in a recogniser vocabulary directory."""
DICT_FILE = "words.dict"
"""The pronunciation dictionary in a recogniser vocabulary directory."""
SENTENCE_START = "<s>"
SENTENCE_END = "</s>"
_NO_PROBABILITY = -99.0  # the log10 ARPA gives <s>, which is never predicted
_EPSILON = 1e-12


def sentence_words(texts: Iterable[str]) -> list[list[str]]:
    """Each text as the words the `wer` metric scores (`normalize_text(text, "en")`), empty texts dropped."""
    return [words for words in (normalize_text(text, "en").split() for text in texts) if words]


def arpa_language_model(sentences: Sequence[Sequence[str]], order: int = 3, discount: float = 0.5) -> str:
    """A back-off n-gram language model of `sentences`, in ARPA format (see the module docstring).

    Args:
        sentences: the training sentences, each a sequence of words (without `<s>`, `</s>`).
        order: the n-gram order, at least 1.
        discount: subtracted from every count above the unigrams, in (0, 1).

    Returns:
        The ARPA text (log10 probabilities and back-off weights, 6 decimals; n-grams sorted).

    Raises:
        ValueError: no sentence, an empty sentence, a word that is `<s>`/`</s>` or holds whitespace, or `order` /
            `discount` out of range.
    """
    if order < 1:
        raise ValueError(f"language model order must be at least 1, got {order}")
    if not 0.0 < discount < 1.0:
        raise ValueError(f"language model discount must be in (0, 1), got {discount}")
    if not sentences:
        raise ValueError("no training sentences to build a language model from")
    counts: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(order + 1)]
    for number, sentence in enumerate(sentences):
        _check_sentence(number, sentence)
        tokens = (SENTENCE_START, *sentence, SENTENCE_END)
        for n in range(1, order + 1):
            for start in range(len(tokens) - n + 1):
                gram = tokens[start : start + n]
                if gram != (SENTENCE_START,):
                    counts[n][gram] += 1
    total = sum(counts[1].values())
    probs: list[dict[tuple[str, ...], float]] = [{} for _ in range(order + 1)]
    backoffs: dict[tuple[str, ...], float] = {}
    probs[1] = {gram: count / total for gram, count in counts[1].items()}
    for n in range(2, order + 1):
        followers: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
        for gram, count in counts[n].items():
            followers[gram[:-1]].append((gram[-1], count))
        for history, seen in followers.items():
            mass = sum(count for _, count in seen)
            # The lower order's probability of the words seen here: what the back-off must not give out again.
            covered = sum(_probability(word, history[1:], probs, backoffs) for word, _ in seen)
            if 1.0 - covered <= _EPSILON:
                # The lower order has no mass left for unseen words: keep this history's counts undiscounted.
                probs[n].update({(*history, word): count / mass for word, count in seen})
                continue
            probs[n].update({(*history, word): (count - discount) / mass for word, count in seen})
            backoffs[history] = (discount * len(seen) / mass) / (1.0 - covered)
    return _arpa_text(probs, backoffs, order)


def restrict_dictionary(words: Iterable[str], dictionary: str) -> str:
    """The entries of a CMU-format pronunciation dictionary whose word is in `words`, in the dictionary's order.

    Entries are `word PHONES`, alternates `word(2) PHONES`; every alternate of a wanted word is kept.

    Raises:
        ValueError: some words have no entry (naming the first few).
    """
    wanted = set(words)
    kept, found = [], set()
    for line in dictionary.splitlines():
        head = line.split(maxsplit=1)[0] if line.strip() else ""
        word = head.split("(", 1)[0]
        if word in wanted:
            kept.append(line.rstrip())
            found.add(word)
    missing = sorted(wanted - found)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(f"{len(missing)} words have no pronunciation in the recogniser's dictionary: {shown}")
    return "\n".join(kept) + "\n"


def pocketsphinx_dictionary() -> str:
    """The text of PocketSphinx's shipped US English pronunciation dictionary (`cmudict-en-us.dict`).

    Raises:
        ImportError: pocketsphinx is not installed.
    """
    pocketsphinx = require("pocketsphinx", EVAL_EXTRA, "the recogniser vocabulary")
    path = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    return path.read_text(encoding="utf-8")


def write_recognizer_vocabulary(
    directory: str | os.PathLike[str], training_texts: Iterable[str], order: int = 3, discount: float = 0.5
) -> Path:
    """Write `lm.arpa` and `words.dict` for `asr=pocketsphinx:<directory>`, from training sentences only.

    Args:
        directory: where to write (created if missing).
        training_texts: the training sentences, as written (normalised here like the `wer` metric does).
        order: the LM's n-gram order.
        discount: the LM's absolute discount.

    Returns:
        The directory.

    Raises:
        ValueError: no sentence, or a word that PocketSphinx's dictionary cannot pronounce.
        ImportError: pocketsphinx is not installed.
    """
    sentences = sentence_words(training_texts)
    lm = arpa_language_model(sentences, order, discount)
    words = {word for sentence in sentences for word in sentence}
    dictionary = restrict_dictionary(words, pocketsphinx_dictionary())
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / LM_FILE, lm)
    write_text_atomic(out / DICT_FILE, dictionary)
    return out


def vocabulary_files(directory: str | os.PathLike[str], backend: str) -> tuple[Path, Path]:
    """The (`lm.arpa`, `words.dict`) of a recogniser vocabulary directory.

    Raises:
        ValueError: the directory or one of its files is missing.
    """
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise ValueError(
            f"{backend}: vocabulary directory '{directory}' does not exist (it holds {LM_FILE}, {DICT_FILE})"
        )
    files = (folder / LM_FILE, folder / DICT_FILE)
    for file in files:
        if not file.is_file():
            raise ValueError(f"{backend}: vocabulary directory '{directory}' has no {file.name}")
    return files


def _check_sentence(number: int, sentence: Sequence[str]) -> None:
    if not sentence:
        raise ValueError(f"training sentence {number} has no words")
    for word in sentence:
        if word in (SENTENCE_START, SENTENCE_END) or not word or any(ch.isspace() for ch in word):
            raise ValueError(f"training sentence {number}: {word!r} is not a word a language model can hold")


def _probability(
    word: str,
    history: tuple[str, ...],
    probs: Sequence[dict[tuple[str, ...], float]],
    backoffs: dict[tuple[str, ...], float],
) -> float:
    # P(word | history) as the ARPA model gives it: the explicit probability, else the history's back-off weight
    # (1 when it has none) times the probability given the history less its first word.
    gram = (*history, word)
    if gram in probs[len(gram)]:
        return probs[len(gram)][gram]
    if not history:
        return 0.0
    return backoffs.get(history, 1.0) * _probability(word, history[1:], probs, backoffs)


def _arpa_text(
    probs: Sequence[dict[tuple[str, ...], float]], backoffs: dict[tuple[str, ...], float], order: int
) -> str:
    unigrams = dict(probs[1])
    lines = ["", "\\data\\"]
    sizes = [len(probs[n]) + (1 if n == 1 else 0) for n in range(1, order + 1)]  # <s> is a unigram too
    lines += [f"ngram {n}={size}" for n, size in enumerate(sizes, start=1)]
    for n in range(1, order + 1):
        lines += ["", f"\\{n}-grams:"]
        grams = sorted([*unigrams, (SENTENCE_START,)]) if n == 1 else sorted(probs[n])
        for gram in grams:
            logp = _NO_PROBABILITY if gram == (SENTENCE_START,) else math.log10(probs[n][gram])
            line = f"{logp:.6f}\t{' '.join(gram)}"
            if n < order and gram in backoffs:
                line += f"\t{math.log10(backoffs[gram]):.6f}"
            lines.append(line)
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)

"""f5lite.metrics.langmodel: the ARPA back-off LM (a hand-computed tiny model, distributions that sum to one), the
restricted dictionary, the vocabulary directory and `asr=pocketsphinx:<dir>` built from training sentences only."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from f5lite.metrics.langmodel import (
    DICT_FILE,
    LM_FILE,
    arpa_language_model,
    restrict_dictionary,
    sentence_words,
    write_recognizer_vocabulary,
)

# Sentences "a" and "a b", bigrams, discount 0.5, by hand: unigrams a 2/5, </s> 2/5, b 1/5; after <s> only "a" was
# seen: (2 - 0.5) / 2 = 0.75, back-off 0.25 / (1 - 0.4); after "a": "</s>" and "b" at 0.25 each, back-off
# 0.5 / (1 - 0.4 - 0.2) = 1.25 (more than one is fine: it scales a lower-order probability); after "b": "</s>" at
# 0.5, back-off 0.5 / (1 - 0.4).
TINY_ARPA = """
\\data\\
ngram 1=4
ngram 2=4

\\1-grams:
-0.397940\t</s>
-99.000000\t<s>\t-0.380211
-0.397940\ta\t0.096910
-0.698970\tb\t-0.079181

\\2-grams:
-0.124939\t<s> a
-0.602060\ta </s>
-0.602060\ta b
-0.301030\tb </s>

\\end\\
"""


def test_a_known_tiny_corpus_gives_the_hand_computed_arpa() -> None:
    assert arpa_language_model([["a"], ["a", "b"]], order=2, discount=0.5) == TINY_ARPA


def read_arpa(text: str) -> tuple[dict[tuple[str, ...], float], dict[tuple[str, ...], float]]:
    """Probabilities and back-off weights (linear, not log10) of an ARPA text."""
    probs, backoffs = {}, {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 2 or line.startswith("ngram"):
            continue
        gram = tuple(fields[1].split())
        probs[gram] = 10 ** float(fields[0]) if gram != ("<s>",) else 0.0
        if len(fields) == 3:
            backoffs[gram] = 10 ** float(fields[2])
    return probs, backoffs


def probability(word: str, history: tuple[str, ...], probs: dict, backoffs: dict) -> float:
    """P(word | history) as a back-off decoder reads the model."""
    if (*history, word) in probs:
        return probs[(*history, word)]
    if not history:
        return 0.0
    return backoffs.get(history, 1.0) * probability(word, history[1:], probs, backoffs)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_every_history_s_distribution_sums_to_one(order: int) -> None:
    rng = random.Random(order)
    words = [f"w{i}" for i in range(12)]
    sentences = [[rng.choice(words[: rng.randint(2, 12)]) for _ in range(rng.randint(1, 7))] for _ in range(60)]
    probs, backoffs = read_arpa(arpa_language_model(sentences, order=order, discount=0.7))
    vocabulary = sorted({w for s in sentences for w in s}) + ["</s>"]
    histories = {gram[:-1] for gram in probs if len(gram) > 1} | {()}
    for history in histories:
        total = sum(probability(word, history, probs, backoffs) for word in vocabulary)
        assert total == pytest.approx(1.0, abs=2e-5), history  # 6 printed decimals of log10


def test_the_model_holds_only_n_grams_of_its_sentences() -> None:
    probs, _ = read_arpa(arpa_language_model([["the", "cat", "sat"]], order=3))
    assert set(probs) == {
        ("<s>",), ("the",), ("cat",), ("sat",), ("</s>",),
        ("<s>", "the"), ("the", "cat"), ("cat", "sat"), ("sat", "</s>"),
        ("<s>", "the", "cat"), ("the", "cat", "sat"), ("cat", "sat", "</s>"),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("sentences", "order", "discount", "message"),
    [
        ([], 3, 0.5, "no training sentences"),
        ([["a"], []], 3, 0.5, "training sentence 1 has no words"),
        ([["a", "</s>"]], 3, 0.5, "'</s>' is not a word"),
        ([["a b"]], 3, 0.5, "'a b' is not a word"),
        ([["a"]], 0, 0.5, "order must be at least 1, got 0"),
        ([["a"]], 2, 1.0, "discount must be in (0, 1), got 1.0"),
    ],
)
def test_bad_input_is_refused_in_one_line(sentences: list, order: int, discount: float, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        arpa_language_model(sentences, order, discount)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_sentence_words_are_what_the_wer_metric_scores() -> None:
    assert sentence_words(["The cat's hat, again!", "  ", "Two DOGS."]) == [
        ["the", "cat's", "hat", "again"],
        ["two", "dogs"],
    ]


def test_restrict_dictionary_keeps_every_alternate_of_the_wanted_words_only() -> None:
    cmu = "a AH\na(2) EY\nab AE B\nread R IY D\nread(2) R EH D\nzoo Z UW\n"
    assert restrict_dictionary(["read", "a"], cmu) == "a AH\na(2) EY\nread R IY D\nread(2) R EH D\n"
    with pytest.raises(ValueError, match=r"^2 words have no pronunciation in the recogniser's dictionary: qq, xx$"):
        restrict_dictionary(["a", "xx", "qq"], cmu)


def test_the_vocabulary_directory_comes_from_the_training_sentences_alone(tmp_path: Path) -> None:
    pytest.importorskip("pocketsphinx")
    training = ["The small dog saw a red ball.", "Anna found three green boxes."]
    out = write_recognizer_vocabulary(tmp_path / "asr", training)
    assert (out / LM_FILE).read_text() == arpa_language_model(sentence_words(training), order=3)
    dictionary = (out / DICT_FILE).read_text()
    heads = {line.split()[0].split("(")[0] for line in dictionary.splitlines()}
    assert heads == {w for s in sentence_words(training) for w in s}
    with pytest.raises(ValueError, match="no pronunciation in the recogniser's dictionary: zzqxv$"):
        write_recognizer_vocabulary(tmp_path / "bad", ["a zzqxv"])


def test_pocketsphinx_loads_a_vocabulary_directory_and_refuses_a_missing_one(tmp_path: Path) -> None:
    pytest.importorskip("pocketsphinx")
    from f5lite.metrics.asr import PocketsphinxRecognizer, load_recognizer

    out = write_recognizer_vocabulary(tmp_path / "asr", ["The small dog saw a red ball."])
    recognizer = load_recognizer(f"pocketsphinx:{out}")
    assert isinstance(recognizer, PocketsphinxRecognizer)
    assert recognizer._decoder.config["lm"] == str(out / LM_FILE)
    assert recognizer._decoder.config["dict"] == str(out / DICT_FILE)
    with pytest.raises(ValueError, match=r"vocabulary directory '.*nowhere' does not exist \(it holds lm.arpa"):
        load_recognizer(f"pocketsphinx:{tmp_path / 'nowhere'}")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / LM_FILE).write_text("x")
    with pytest.raises(ValueError, match=r"vocabulary directory '.*half' has no words.dict$"):
        load_recognizer(f"pocketsphinx:{tmp_path / 'half'}")

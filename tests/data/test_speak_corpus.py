"""scripts/make_speak_corpus.py: its sentence generator (seeded, held-out sentences never in training, every test
word seen in training), its word list (every word pronounceable by the recogniser), and (with espeak-ng) the whole
corpus on a few sentences: a valid prepared folder, an f5lite-eval test set, a recogniser vocabulary built from the
training sentences alone."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from lhotse import CutSet
from support.scripts import load_script

from f5lite.audio import SAMPLE_RATE, load_audio
from f5lite.data.testset import read_testset
from f5lite.metrics.langmodel import DICT_FILE, LM_FILE, arpa_language_model, sentence_words

ESPEAK = shutil.which("espeak-ng") is not None


@pytest.fixture(scope="module")
def corpus() -> ModuleType:
    return load_script("make_speak_corpus")


def test_the_split_is_seeded_distinct_and_spelled_from_training(corpus: ModuleType) -> None:
    words = corpus.read_word_list()
    train, test = corpus.draw_sentences(words, 400, 40, seed=3)
    assert (train, test) == corpus.draw_sentences(words, 400, 40, seed=3)
    assert (train, test) != corpus.draw_sentences(words, 400, 40, seed=4)
    assert len(set(train)) == 400 and len(set(test)) == 40
    assert not set(test) & set(train), "a held-out sentence is in training"
    seen = {word for sentence in sentence_words(train) for word in sentence}
    assert all(set(sentence) <= seen for sentence in sentence_words(test))
    # The first sentences do not depend on how many are asked for after them.
    assert corpus.draw_sentences(words, 50, 5, seed=3)[0] == train[:50]
    for sentence in train + test:
        assert sentence[0].isupper() and sentence.endswith(".") and "|" not in sentence
        assert not re.search(r"\ba [aeiou]", sentence.lower()), sentence  # "an apple", "an old cat"


def test_asking_for_more_than_the_generator_can_find_is_one_line(corpus: ModuleType) -> None:
    with pytest.raises(
        ValueError,
        match=r"^found only 1 training and 0 test sentences of 1 and 50 asked \(test words must occur in training",
    ):
        corpus.draw_sentences(corpus.read_word_list(), 1, 50, seed=0)


def test_every_word_of_the_list_is_in_the_recogniser_s_dictionary(corpus: ModuleType) -> None:
    pytest.importorskip("pocketsphinx")
    from f5lite.metrics.langmodel import pocketsphinx_dictionary, restrict_dictionary

    words = corpus.read_word_list()
    listed = {w.lower() for section in words.sections.values() for w in section} | {p for _, p in words.nouns}
    listed |= {w for t in corpus.TEMPLATES for w in t.split() if not w.startswith("{")} | set(corpus.DETERMINERS)
    listed |= {"an"}
    assert len(listed) > 300
    restrict_dictionary(listed, pocketsphinx_dictionary())  # raises naming any word it cannot pronounce


def test_a_bad_word_list_is_refused_naming_the_line(corpus: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "words.txt"
    bad.write_text("[noun]\ndog\n")
    with pytest.raises(ValueError, match=r"words.txt:2: a noun line is 'singular plural'"):
        corpus.read_word_list(bad)
    bad.write_text("[verbs]\nran\n")
    with pytest.raises(ValueError, match=r"words.txt:1: unknown section \[verbs\]"):
        corpus.read_word_list(bad)


@pytest.mark.skipif(not ESPEAK, reason="needs espeak-ng (Debian/Ubuntu: apt-get install espeak-ng)")
def test_a_few_sentences_make_a_prepared_folder_a_test_set_and_a_vocabulary(corpus: ModuleType, tmp_path) -> None:
    pytest.importorskip("pocketsphinx")
    out = tmp_path / "speak"
    argv = ["--out", str(out), "--train", "12", "--test", "3", "--val", "2", "--workers", "1", "--seed", "5"]
    assert corpus.main(argv) == 0
    with open(out / "metadata.csv", encoding="utf-8") as file:
        training = [row["text"] for row in csv.DictReader(file, delimiter="|")]
    expected_train, expected_test = corpus.draw_sentences(corpus.read_word_list(), 12, 3, seed=5)
    assert training == expected_train
    # The prepared folder: training cuts, the validation split, the vocab, every clip 24 kHz.
    cuts = CutSet.from_file(out / "cuts.jsonl.gz")
    val = CutSet.from_file(out / "val" / "cuts.jsonl.gz")
    assert len(cuts) == 10 and len(val) == 2 and (out / "vocab.txt").is_file() and (out / "report.json").is_file()
    assert {c.supervisions[0].text for c in [*cuts, *val]} == set(training)
    # The test set: the held-out sentences, never trained on, each prompted by a training clip of its voice.
    rows = read_testset(out / "test" / "testset.txt")
    assert [r.gen_text for r in rows] == expected_test and not {r.gen_text for r in rows} & set(training)
    for row in rows:
        assert row.ref_text in training and row.gt_audio is not None and row.gt_audio.parent == out / "test" / "audio"
        assert row.gt_audio.name == f"{row.id}.flac"  # so audio_dir=OUT/test/audio scores the ground truth
        assert load_audio(row.gt_audio).numel() > 0.5 * SAMPLE_RATE
    # The recogniser vocabulary: exactly the model of the training sentences.
    assert (out / "asr" / LM_FILE).read_text() == arpa_language_model(sentence_words(training), order=3)
    assert (out / "asr" / DICT_FILE).is_file()
    assert '"espeak": "espeak-ng' in (out / "corpus.json").read_text()


@pytest.mark.heavy
@pytest.mark.skipif(not ESPEAK, reason="needs espeak-ng (Debian/Ubuntu: apt-get install espeak-ng)")
def test_f5lite_eval_hears_the_held_out_ground_truth_with_the_corpus_vocabulary(corpus: ModuleType, tmp_path) -> None:
    """The floors' command of the module docstring on a smaller corpus: both floors low, and the same recogniser."""
    pytest.importorskip("pocketsphinx")
    pytest.importorskip("jiwer")
    from f5lite.eval.cli import main as evaluate

    out = tmp_path / "speak"
    assert corpus.main(["--out", str(out), "--train", "600", "--test", "12", "--val", "0", "--seed", "1"]) == 0
    floor = tmp_path / "floor"
    command = [f"audio_dir={out / 'test' / 'audio'}", f"testset={out / 'test' / 'testset.txt'}", f"output={floor}",
               "metrics=[wer]", f"asr=pocketsphinx:{out / 'asr'}", "floor_vocoder=griffin_lim", "device=cpu"]  # fmt: skip
    assert evaluate(command) == 0
    summary = json.loads((floor / "summary.json").read_text())
    assert summary["ground_truth"]["count"] == summary["ground_truth_vocoded"]["count"] == 12
    # With the full corpus (3000 sentences) the floors are 0.15 and 0.14; 600 sentences make a weaker LM.
    assert summary["ground_truth"]["wer"] <= 0.35, summary
    assert summary["ground_truth_vocoded"]["wer"] <= 0.35, summary

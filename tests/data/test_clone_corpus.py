"""scripts/make_clone_corpus.py: the plan is seeded, no held-out voice (in any form) and no test sentence reaches
training, a third of the test sentences come from templates training never uses; with the engines installed, a small
corpus is a prepared folder, a test set with voices and an enrollment list f5lite-eval reads."""

from __future__ import annotations

import argparse
import csv
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from lhotse import CutSet
from support.scripts import load_script

from f5lite.data.testset import read_testset
from f5lite.metrics.langmodel import sentence_words

ENGINES = all(shutil.which(p) for p in ("flite", "text2wave", "espeak-ng"))
SMALL = ["--train", "60", "--test-per-voice", "2", "--train-rows-per-voice", "1", "--prompts", "2", "--enroll", "2",
         "--val", "2", "--workers", "1", "--adapt-minutes", "0.3"]  # fmt: skip


@pytest.fixture(scope="module")
def corpus() -> ModuleType:
    return load_script("make_clone_corpus")


def _plan(corpus: ModuleType, out: Path, seed: int = 0) -> tuple:
    args = corpus.parse_args(["--out", str(out), *SMALL, "--seed", str(seed)])
    return corpus.plan_corpus(out, args)


def test_enough_voices_and_the_held_out_ones_are_never_a_training_voice_in_any_form(corpus: ModuleType) -> None:
    train, held = corpus.voices_of("train"), corpus.voices_of("held_out")
    assert len(train) >= 16 and len(held) >= 4
    assert {v.split for v in corpus.VOICES} == set(corpus.SPLITS)
    assert len({v.name for v in corpus.VOICES}) == len(corpus.VOICES)
    # "In any form": no training voice is the same engine voice as a held-out one, whatever its vocal tract.
    assert not {(v.engine, v.engine_voice) for v in train} & {(v.engine, v.engine_voice) for v in held}
    recorded = [v for v in held if v.engine in ("flite", "festival")]
    assert len({v.engine for v in recorded}) == 2, "a flite and a festival recorded-speaker voice are held out"


def test_the_plan_is_seeded_and_keeps_held_out_voices_and_test_sentences_out_of_training(
    corpus: ModuleType, tmp_path: Path
) -> None:
    plan, training, tests = _plan(corpus, tmp_path)
    again, training_again, tests_again = _plan(corpus, tmp_path)
    assert (plan, training, tests) == (again, training_again, tests_again)
    assert _plan(corpus, tmp_path, seed=1)[1] != training
    held = {v.name for v in corpus.voices_of("held_out")}
    assert not {voice.name for _, _, voice in plan.train} & held, "a held-out voice reads a training clip"
    # Every training clip's text is two training sentences; no test sentence is among them.
    said = {s for _, text, _ in plan.train for s in training if s in text}
    assert said <= set(training) and not set(tests) & set(training)
    assert not any(t in text for t in tests for _, text, _ in plan.train)
    # Test rows: each held-out voice and each training voice, unseen sentences, prompts read by the row's voice.
    voices = [row[1].name for row in plan.tests]
    assert voices.count("slt") == 2 and voices.count("awb") == 1
    assert {row[2] for row in plan.tests} <= set(tests) and len({row[2] for row in plan.tests}) == len(plan.tests)
    for ident, voice, _, gt, prompt, prompt_text in plan.tests:
        assert gt.name == f"{ident}.flac" and prompt.parent.name == voice.name and prompt_text in training
    # Every word of a test sentence was seen in training (the recogniser's vocabulary can spell it).
    seen = {w for words in sentence_words(training) for w in words}
    assert all(set(words) <= seen for words in sentence_words(tests))


def _template_pattern(template: str, speak: ModuleType, words) -> re.Pattern[str]:
    """A template as a regular expression over lower-case sentences, each slot the words it draws from."""
    slots = {"det": (*speak.DETERMINERS, "an"), "noun": [n for n, _ in words.nouns], "nouns": [p for _, p in words.nouns],
             "adj": words.sections["adjective"], "name": words.sections["name"], "tv": words.sections["transitive"],
             "iv": words.sections["intransitive"], "prep": words.sections["preposition"],
             "place": words.sections["place"], "adv": words.sections["adverb"], "num": words.sections["number"]}  # fmt: skip
    parts = [f"(?:{'|'.join(re.escape(w.lower()) for w in slots[t.strip('{}')])})" if t.startswith("{") else
             re.escape(t) for t in template.split()]  # fmt: skip
    return re.compile(" ".join(parts))


def test_a_third_of_the_test_sentences_come_from_templates_training_never_uses(corpus: ModuleType, tmp_path) -> None:
    _, training, tests = _plan(corpus, tmp_path)
    speak = load_script("make_speak_corpus")
    words = speak.read_word_list()
    trained = [_template_pattern(t, speak, words) for t in speak.TEMPLATES]
    extra = [_template_pattern(t, speak, words) for t in corpus.EXTRA_TEMPLATES]

    def matches(patterns: list[re.Pattern[str]], sentence: str) -> bool:
        return any(p.fullmatch(sentence.lower().rstrip(".")) for p in patterns)

    assert all(matches(trained, s) for s in training)
    outside = [s for s in tests if not matches(trained, s)]
    assert len(outside) == len(tests) // 3 and all(matches(extra, s) for s in outside)


def test_bad_arguments_are_one_line(corpus: ModuleType) -> None:
    with pytest.raises(SystemExit):
        corpus.parse_args(["--enroll", "1"])
    with pytest.raises(SystemExit):
        corpus.parse_args(["--train", "10", "--val", "5"])
    assert isinstance(corpus.parse_args([]), argparse.Namespace)


@pytest.mark.heavy
@pytest.mark.skipif(not ENGINES, reason="needs flite, festival and espeak-ng (apt-get install flite festival "
                    "festvox-kallpc16k festvox-kdlpc16k espeak-ng)")  # fmt: skip
def test_a_small_corpus_is_prepared_with_a_voice_test_set_an_enrollment_list_and_licences(
    corpus: ModuleType, tmp_path: Path
) -> None:
    pytest.importorskip("pocketsphinx")
    from f5lite.metrics.voices import read_enrollment

    out = tmp_path / "clone"
    assert corpus.main(["--out", str(out), *SMALL]) == 0
    held = {v.name for v in corpus.voices_of("held_out")}
    with open(out / "metadata.csv", encoding="utf-8") as file:
        speakers = {row["speaker"] for row in csv.DictReader(file, delimiter="|")}
    assert speakers == {v.name for v in corpus.voices_of("train")}
    cuts = [*CutSet.from_file(out / "cuts.jsonl.gz"), *CutSet.from_file(out / "val" / "cuts.jsonl.gz")]
    assert not {c.supervisions[0].speaker for c in cuts} & held
    assert not any(name in c.recording.sources[0].source for c in cuts for name in held)
    rows = read_testset(out / "test" / "testset.txt")
    assert {r.voice for r in rows} == {v.name for v in corpus.VOICES}
    enrolled = read_enrollment(out / "test" / "voices.txt")
    assert enrolled.splits == {v.name: v.split for v in corpus.VOICES}
    licences = (out / "LICENCES.md").read_text()
    assert all(f"| {v.name} |" in licences for v in corpus.VOICES)
    assert (out / "licences" / "flite.txt").is_file() and (out / "asr" / "lm.arpa").is_file()


def test_the_vtl_jitter_varies_training_clips_alone_and_leaves_the_plan_as_it_was(corpus: ModuleType, tmp_path) -> None:
    plain, training, tests = _plan(corpus, tmp_path)
    args = corpus.parse_args(["--out", str(tmp_path), *SMALL, "--vtl-jitter", "0.1"])
    jittered, training_j, tests_j = corpus.plan_corpus(tmp_path, args)
    assert (training_j, tests_j) == (training, tests) and jittered.tests == plain.tests
    assert jittered.enroll == plain.enroll
    pairs = list(zip(plain.train, jittered.train, strict=True))
    assert all(a[:2] == b[:2] and a[2].name == b[2].name for a, b in pairs)  # same files, texts and speakers
    ratios = [b[2].vtl / a[2].vtl for a, b in pairs]
    assert all(0.9 <= r <= 1.1 for r in ratios) and len({round(r, 3) for r in ratios}) > len(ratios) // 2
    assert corpus.plan_corpus(tmp_path, args)[0] == jittered  # seeded
    with pytest.raises(SystemExit):
        corpus.parse_args(["--vtl-jitter", "0.5"])


def test_extra_voices_read_training_clips_only_and_leave_the_test_rows_as_they_were(
    corpus: ModuleType, tmp_path
) -> None:
    plain, training, tests = _plan(corpus, tmp_path)
    args = corpus.parse_args(["--out", str(tmp_path), *SMALL, "--extra-voices", "24"])
    more, training_m, tests_m = corpus.plan_corpus(tmp_path, args)
    assert (training_m, tests_m, more.tests, more.enroll) == (training, tests, plain.tests, plain.enroll)
    readers = [voice.name for _, _, voice in more.train]  # in turn: the base voices, then the extra ones
    order = [v.name for v in (*corpus.voices_of("train"), *corpus.EXTRA_VOICES)]
    assert len(order) == 45 and readers == [order[k % 45] for k in range(len(readers))] and len(readers) > 21
    assert [text for _, text, _ in more.train] == [text for _, text, _ in plain.train]  # the same hours of text
    # None of them is a held-out voice in any form: neither its engine voice nor the Klatt synthesizer of en-us+klatt.
    held = {(v.engine, v.engine_voice) for v in corpus.voices_of("held_out")}
    assert not {(v.engine, v.engine_voice) for v in corpus.EXTRA_VOICES} & held
    assert all(v.split == "train" and "klatt" not in v.engine_voice for v in corpus.EXTRA_VOICES)
    with pytest.raises(SystemExit):
        corpus.parse_args(["--extra-voices", str(len(corpus.EXTRA_VOICES) + 1)])


def test_longer_prompts_join_distinct_prompts_of_the_row_voice_and_keep_the_rest_of_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from f5lite.audio import SAMPLE_RATE, load_audio, save_audio
    from f5lite.data.testset import TestRow, write_testset

    lengths = {"a0": 0.5, "a1": 0.75, "a2": 1.0, "b0": 0.25}
    for name, seconds in lengths.items():
        save_audio(tmp_path / f"{name}.flac", torch.full((int(seconds * SAMPLE_RATE),), 0.1), SAMPLE_RATE)
    prompts = {"a": ["a0", "a1", "a2"], "b": ["b0"]}
    rows = [TestRow(f"{v}{k}", tmp_path / f"{prompts[v][k % len(prompts[v])]}.flac",
                    f"text {prompts[v][k % len(prompts[v])]}", f"say {v}{k}", tmp_path / "a0.flac", voice=v)
            for v in ("a", "b") for k in range(4)]  # fmt: skip
    write_testset(tmp_path / "testset.txt", rows)
    load_script("eval_paths").main(["--testset", str(tmp_path / "testset.txt"), "--prompt-clips", "2"])
    longer = read_testset(tmp_path / "testset_prompt2.txt")
    assert [r.id for r in longer] == ["a0", "a1", "a2", "a3"]  # voice b has one prompt: dropped
    for row, before in zip(longer, rows, strict=False):
        first, second = prompts["a"][int(row.id[1]) % 3], prompts["a"][(int(row.id[1]) + 1) % 3]
        assert row.ref_text == f"text {first} text {second}"
        assert (row.gen_text, row.gt_audio, row.voice) == (before.gen_text, before.gt_audio, before.voice)
        seconds = len(load_audio(row.ref_audio)) / SAMPLE_RATE
        assert seconds == pytest.approx(lengths[first] + lengths[second], abs=1e-3)
    with pytest.raises(SystemExit):
        load_script("eval_paths").main(["--testset", str(tmp_path / "testset.txt"), "--prompt-clips", "1"])
    (tmp_path / "a1.flac").write_bytes(b"not audio")  # a corrupt prompt clip: one line naming it, no traceback
    with pytest.raises(SystemExit):
        load_script("eval_paths").main(["--testset", str(tmp_path / "testset.txt"), "--prompt-clips", "2"])
    assert "a1.flac" in capsys.readouterr().err.strip().splitlines()[-1]

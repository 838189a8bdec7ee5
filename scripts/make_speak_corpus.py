"""Make the `speak` corpus: thousands of synthetic English sentences read by espeak-ng, prepared for training, with a
held-out test set for f5lite-eval and a recogniser vocabulary that can hear its words.

The sentences come from a seeded generator over `scripts/speak_words.txt` (a few hundred common words written for
this project) in simple templates (subject-verb-object, adjectives, numbers as words, places); the same seed gives
the same sentences, voices and files. Training and test sentences are distinct texts, and every word of a test
sentence occurs in training, so a recogniser vocabulary built from the training sentences can spell it. Each
sentence is read by one voice, taking the voices in turn, and stored as 24 kHz FLAC (lossless, so the ground truth
is espeak-ng's own output). The audio is not committed: it goes under OUT (default runs/speak_corpus, ignored by git).

OUT then holds:
  metadata.csv, audio/VOICE/*.flac    the training utterances (F5-TTS layout with a speaker column)
  cuts.jsonl.gz, vocab.txt, report.json, val/    f5lite-prepare's output, with a validation split of --val
                                      training utterances (for the validation loss and the training prompts)
  test/testset.txt, test/audio/*.flac the held-out test set (id|ref_audio|ref_text|gen_text|gt_audio): each row's
                                      ground truth is a test sentence; its prompt a training clip of the same voice
  rl/prompts.txt                      training prompts for online RL (grpo.prompts): a training clip as the voice,
                                      another training sentence of the same voice to say (its clip the ground truth)
  asr/lm.arpa, asr/words.dict         the recogniser vocabulary, from the training sentences only (f5lite-eval
                                      asr=pocketsphinx:OUT/asr; see f5lite.metrics.langmodel)
  corpus.json                         the settings, counts, espeak-ng version and timings

With the defaults (3000 training sentences, 30 of them the validation split, 100 test sentences, the us_female
voice: 2.07 h of audio, 230 MB) it took 51 s on a shared 2-core CPU (2026-11-26), and the floors of its test
set were WER 0.151 for the recordings and 0.142 through log-mel and Griffin-Lim, against 0.74 with PocketSphinx's
shipped language model (scripts/results/speak_floor_cpu.json).

Usage: python scripts/make_speak_corpus.py [--out DIR] [--train 3000] [--test 100] [--seed 0] [--voices us_female]
       (needs espeak-ng: apt-get install espeak-ng)
Scoring the ground truth (the floors):
  f5lite-eval audio_dir=OUT/test/audio testset=OUT/test/testset.txt output=OUT/floor metrics=[wer] \\
      asr=pocketsphinx:OUT/asr floor_vocoder=griffin_lim
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import soundfile as sf
import torch
from torch import Tensor

from f5lite.audio import SAMPLE_RATE
from f5lite.data.testset import TestRow, write_testset
from f5lite.metrics.langmodel import write_recognizer_vocabulary
from f5lite.prepare import PrepareOptions, prepare
from f5lite.prepare.val_split import ValSplit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the espeak-ng helpers live in the demo-data script
from make_demo_data import ESPEAK_MISSING, Voice, espeak_clip, espeak_version  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORDS_FILE = Path(__file__).resolve().with_name("speak_words.txt")
DEFAULT_OUT = REPO / "runs" / "speak_corpus"
TEST_DIR = "test"
ASR_DIR = "asr"
RL_DIR = "rl"
LM_ORDER = 3
LM_DISCOUNT = 0.5

# US voices only: PocketSphinx's acoustic model is US English and hears little of espeak-ng's British ones. Of the
# US variants, female5 is the one it hears best: the ground-truth WER of 100 held-out sentences with the training
# vocabulary (2026-11-26, 2-core CPU, espeak-ng 1.51) was 0.156 for en-us+f5 at 150 wpm and pitch 50 (0.13-0.25
# from 130 to 170 wpm and pitch 40 to 70), 0.19 for en-us+f2, 0.31 for +klatt, 0.49 for en-us and +m3, 0.5-0.9
# for the others tried (f1, f3, f4, Linda, Steph, Alex, Annie, Andy).
VOICES = {
    "us_female": Voice("us_female", "en-us+f5", 150, 50),
    "us_female2": Voice("us_female2", "en-us+f2", 150, 60),
    "us_klatt": Voice("us_klatt", "en-us+klatt", 150, 50),
    "us_male": Voice("us_male", "en-us+m3", 150, 45),
}
DEFAULT_VOICES = ("us_female",)

SECTIONS = ("noun", "name", "adjective", "transitive", "intransitive", "preposition", "place", "adverb", "number")

# Slots: {det} a determiner, {adj} {noun} {nouns} (plural) {name} {tv} {iv} {prep} {place} {adv} {num}; a slot
# used twice in one template ({noun}...{noun}) is drawn twice.
TEMPLATES = (
    "{det} {adj} {noun} {tv} {det} {noun}",
    "{name} {tv} {num} {adj} {nouns}",
    "{det} {noun} {iv} {prep} the {place}",
    "{name} and {name} {iv} {adv}",
    "{det} {adj} {noun} {tv} {det} {noun} {prep} the {place}",
    "there were {num} {nouns} {prep} the {place}",
    "{det} {noun} was very {adj}",
    "{name} {tv} the {adj} {noun} {adv}",
    "{num} {adj} {nouns} {iv} {prep} the {place}",
    "{det} {adj} {noun} {iv} and {iv} {adv}",
    "{name} {tv} {det} {noun} {prep} the {place} {adv}",
    "the {nouns} {prep} the {place} were {adj}",
)
DETERMINERS = ("the", "a", "my", "his", "her", "our", "this", "that")
_SLOT_SECTION = {"adj": "adjective", "name": "name", "tv": "transitive", "iv": "intransitive", "prep": "preposition",
                 "place": "place", "adv": "adverb", "num": "number"}  # fmt: skip


@dataclass(frozen=True)
class WordList:
    """The sections of the word list: each a tuple of words; `noun` holds (singular, plural) pairs."""

    sections: dict[str, tuple[str, ...]]
    nouns: tuple[tuple[str, str], ...]


def read_word_list(path: Path = WORDS_FILE) -> WordList:
    """Read `[section]` headers and one entry a line ('#' comments); nouns are "singular plural".

    Raises:
        ValueError: an unknown or missing section, a word outside a section, or a noun line without two words.
    """
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
    nouns: list[tuple[str, str]] = []
    current = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            if current not in sections:
                raise ValueError(f"{path}:{number}: unknown section [{current}]; expected one of {', '.join(SECTIONS)}")
            continue
        if current is None:
            raise ValueError(f"{path}:{number}: {line!r} comes before any [section]")
        if current == "noun":
            pair = line.split()
            if len(pair) != 2:
                raise ValueError(f"{path}:{number}: a noun line is 'singular plural', got {line!r}")
            nouns.append((pair[0], pair[1]))
        else:
            sections[current].append(line)
    sections["noun"] = [singular for singular, _ in nouns]
    empty = [name for name, words in sections.items() if not words]
    if empty:
        raise ValueError(f"{path}: section [{empty[0]}] has no words")
    return WordList({name: tuple(words) for name, words in sections.items()}, tuple(nouns))


def make_sentence(rng: random.Random, words: WordList, templates: Sequence[str] = TEMPLATES) -> str:
    """One sentence from a random one of `templates`, capitalised, with a full stop ("a" before a vowel made "an")."""
    template = rng.choice(templates)
    out: list[str] = []
    for token in template.split():
        if not token.startswith("{"):
            out.append(token)
            continue
        slot = token.strip("{}")
        if slot == "det":
            out.append(rng.choice(DETERMINERS))
        elif slot in ("noun", "nouns"):
            out.append(rng.choice(words.nouns)[0 if slot == "noun" else 1])
        else:
            out.append(rng.choice(words.sections[_SLOT_SECTION[slot]]))
    for i in range(len(out) - 1):
        if out[i] == "a" and out[i + 1][0] in "aeiou":
            out[i] = "an"
    text = " ".join(out)
    return text[0].upper() + text[1:] + "."


def draw_sentences(words: WordList, train: int, test: int, seed: int) -> tuple[list[str], list[str]]:
    """`train` distinct training sentences, then `test` more, distinct from them and each other, whose every word
    occurs in training; the same for the same arguments.

    Raises:
        ValueError: the counts are not positive, or the generator cannot find enough new sentences.
    """
    if train < 1 or test < 1:
        raise ValueError(f"--train and --test must be at least 1, got {train} and {test}")
    rng = random.Random(seed)
    attempts = 1000 * (train + test)  # generating is cheap; the cap only stops a corpus larger than the templates
    seen: set[str] = set()
    training: list[str] = []
    while len(training) < train and attempts:
        attempts -= 1
        sentence = make_sentence(rng, words)
        if sentence not in seen:
            seen.add(sentence)
            training.append(sentence)
    vocabulary = {word for sentence in training for word in _words(sentence)}
    held_out: list[str] = []
    while len(held_out) < test and attempts:
        attempts -= 1
        sentence = make_sentence(rng, words)
        if sentence not in seen and set(_words(sentence)) <= vocabulary:
            seen.add(sentence)
            held_out.append(sentence)
    if len(training) < train or len(held_out) < test:
        raise ValueError(
            f"found only {len(training)} training and {len(held_out)} test sentences of {train} and {test} "
            "asked (test words must occur in training: ask for more training sentences or fewer test ones)"
        )
    return training, held_out


def _words(sentence: str) -> list[str]:
    return sentence.lower().rstrip(".").split()


@dataclass(frozen=True)
class Job:
    """One clip to make: `text` read by `voice` through `render` (a module-level function, so that a worker process
    can be handed it), written to `path` (FLAC)."""

    voice: Any
    text: str
    path: Path
    render: Callable[[Any, str, Path], Tensor] = espeak_clip


_WORKDIR: Path | None = None


def _start_worker() -> None:
    global _WORKDIR  # each worker process keeps one scratch folder for espeak-ng's WAV file
    _WORKDIR = Path(tempfile.mkdtemp(prefix="speak_corpus_"))
    torch.set_num_threads(1)  # the parallelism is the processes': threads in each would fight over the cores


def _make_clip(job: Job) -> float:
    global _WORKDIR  # in this process (workers=1) the scratch folder is made at the first clip
    if _WORKDIR is None:
        _WORKDIR = Path(tempfile.mkdtemp(prefix="speak_corpus_"))
    waveform = job.render(job.voice, job.text, _WORKDIR)
    job.path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(job.path, waveform.numpy(), SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return waveform.numel() / SAMPLE_RATE


def synthesize(jobs: Sequence[Job], workers: int) -> float:
    """Make every clip with `workers` processes (1: in this one); returns the seconds of audio made."""
    if workers == 1:
        return sum(_make_clip(job) for job in jobs)
    with ProcessPoolExecutor(workers, initializer=_start_worker) as pool:
        return sum(pool.map(_make_clip, jobs, chunksize=16))


def write_rl_prompts(out: Path, clips: Sequence[tuple[Path, str, str]], count: int, seed: int) -> Path:
    """Write `count` RL prompts of training material only (`rl/prompts.txt`, a test-set file).

    Args:
        out: the corpus folder.
        clips: the training clips: (audio path, sentence, speaker).
        count: rows to write.
        seed: the draw's seed.

    Returns:
        The file's path.
    """
    rng = random.Random(seed)
    by_voice: dict[str, list[tuple[Path, str]]] = {}
    for path, text, speaker in clips:
        by_voice.setdefault(speaker, []).append((path, text))
    rows = []
    for i in range(count):
        path, text, speaker = rng.choice(clips)
        target, target_text = rng.choice([c for c in by_voice[speaker] if c[0] != path])
        rows.append(TestRow(f"rl{i:05d}", path, text, target_text, target))
    shutil.rmtree(out / RL_DIR, ignore_errors=True)
    file = out / RL_DIR / "prompts.txt"
    file.parent.mkdir(parents=True)
    write_testset(file, rows)
    return file


def build(out: Path, args: argparse.Namespace) -> dict[str, object]:
    """Make the whole corpus in `out` (see the module docstring); returns what corpus.json records."""
    voices = [VOICES[name] for name in args.voices]
    words = read_word_list()
    training, held_out = draw_sentences(words, args.train, args.test, args.seed)
    started = time.perf_counter()
    for folder in ("audio", TEST_DIR, ASR_DIR, RL_DIR):
        shutil.rmtree(out / folder, ignore_errors=True)
    train_rows = [(Path("audio") / v.speaker / f"{i:05d}.flac", text, v) for i, text in enumerate(training)
                  for v in [voices[i % len(voices)]]]  # fmt: skip
    test_ids = [f"t{i:04d}_{voices[i % len(voices)].speaker}" for i in range(len(held_out))]
    test_jobs = [Job(voices[i % len(voices)], text, out / TEST_DIR / "audio" / f"{test_ids[i]}.flac")
                 for i, text in enumerate(held_out)]  # fmt: skip
    jobs = [Job(voice, text, out / relative) for relative, text, voice in train_rows] + test_jobs
    seconds = synthesize(jobs, args.workers)
    synthesized = time.perf_counter()
    lines = [f"{relative.as_posix()}|{text}|{voice.speaker}\n" for relative, text, voice in train_rows]
    (out / "metadata.csv").write_text("audio_file|text|speaker\n" + "".join(lines), encoding="utf-8")
    options = PrepareOptions(tokenizer=args.tokenizer, workers=args.workers, val=ValSplit(count=args.val))
    result = prepare(out / "metadata.csv", out, options)
    prepared = time.perf_counter()
    # The recogniser's vocabulary: the training sentences (the prepared cuts and their validation split), never
    # a test sentence.
    write_recognizer_vocabulary(out / ASR_DIR, training, order=LM_ORDER, discount=LM_DISCOUNT)
    rng = random.Random(args.seed + 1)
    prompts = {v.speaker: [(out / r, t) for r, t, voice in train_rows if voice == v] for v in voices}
    rows = []
    for ident, job in zip(test_ids, test_jobs, strict=True):
        prompt, prompt_text = rng.choice(prompts[job.voice.speaker])
        rows.append(TestRow(ident, prompt, prompt_text, job.text, job.path))
    write_testset(out / TEST_DIR / "testset.txt", rows)
    write_rl_prompts(out, [(out / r, t, v.speaker) for r, t, v in train_rows], args.rl_prompts, args.seed + 2)
    return {
        "seed": args.seed,
        "train_sentences": len(training),
        "test_sentences": len(held_out),
        "val_utterances": len(result.val),
        "train_cuts": len(result.cuts),
        "skipped": len(result.skipped),
        "audio_hours": round(seconds / 3600, 4),
        "voices": [asdict(v) for v in voices],
        "tokenizer": args.tokenizer,
        "lm": {"order": LM_ORDER, "discount": LM_DISCOUNT, "from": "training sentences only"},
        "espeak": espeak_version(),
        "seconds": {
            "synthesis": round(synthesized - started, 1),
            "prepare": round(prepared - synthesized, 1),
            "total": round(time.perf_counter() - started, 1),
        },
        "workers": args.workers,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--train", type=int, default=3000, help="training sentences (default 3000)")
    parser.add_argument("--test", type=int, default=100, help="held-out test sentences (default 100)")
    parser.add_argument("--rl-prompts", type=int, default=1000, help="training prompts for RL (default 1000)")
    parser.add_argument("--val", type=int, default=30, help="training utterances prepare holds out for validation")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sentences and prompts (default 0)")
    parser.add_argument("--voices", nargs="+", choices=sorted(VOICES), default=list(DEFAULT_VOICES),
                        help=f"espeak-ng voices, taken in turn (default: {' '.join(DEFAULT_VOICES)})")  # fmt: skip
    parser.add_argument("--tokenizer", default="char", help="f5lite-prepare's tokenizer (default char)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.val < 0 or args.val >= args.train:
        parser.error(f"--val must be in [0, --train), got {args.val}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Make the corpus; 0 on success, 1 when prepare skipped utterances, 2 for bad input or no espeak-ng."""
    args = parse_args(argv)
    if shutil.which("espeak-ng") is None:
        print(f"make_speak_corpus: {ESPEAK_MISSING}", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        record = build(out, args)
    except ValueError as error:
        print(f"make_speak_corpus: {error}", file=sys.stderr)
        return 2
    (out / "corpus.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(
        f"{record['train_cuts']} training + {record['val_utterances']} validation utterances, "
        f"{record['test_sentences']} test rows, {record['audio_hours']} h of audio in {out} "
        f"({record['seconds']['total']} s)"  # type: ignore[index]
    )
    return 0 if not record["skipped"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""The `ipa` tokenizer: espeak-ng's IPA, one token per character, in any language espeak-ng speaks.

espeak-ng's own command line (`espeak-ng -q --ipa`) is the oracle for the transcriptions: it drops punctuation,
which the tokenizer keeps, so they are compared with the punctuation taken out. The tests that need espeak-ng skip
with the reason when it (or phonemizer, the `ipa` extra) is missing; CI installs both.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from support.tiny_models import TINY, tiny_backbone
from support.trainer_helpers import demo_slice, overrides

import f5lite.text.ipa as ipa_module
from f5lite.config import DiTConfig, compose_config
from f5lite.data.loader import build_train_data
from f5lite.infer import Synthesizer, load_model
from f5lite.paths import demo_dir
from f5lite.prepare.cli import main as prepare_main
from f5lite.prepare.pipeline import PrepareOptions, prepare
from f5lite.sampling import SamplerOptions
from f5lite.storage.pretrained import PretrainedError, load_pretrained, save_pretrained
from f5lite.text import TextEncoder, Vocab, get_tokenizer, ipa_transcribe, load_vocab
from f5lite.text.ipa import PUNCTUATION, load_ipa_backend
from f5lite.text.vocab_builder import build_vocab
from f5lite.train import Trainer
from f5lite.train.export import export_run


def _missing() -> str | None:
    try:
        from phonemizer.backend import EspeakBackend
    except ImportError:
        return "phonemizer is not installed: pip install 'f5lite[ipa]'"
    if not EspeakBackend.is_available() or shutil.which("espeak-ng") is None:
        return "espeak-ng is not installed: apt-get install espeak-ng"
    return None


MISSING = _missing()
needs_espeak = pytest.mark.skipif(MISSING is not None, reason=f"the ipa tokenizer needs espeak-ng: {MISSING}")


@pytest.fixture
def fresh_backends() -> Iterator[None]:
    """No espeak-ng set up yet in this process (and none left behind that saw a monkeypatched lookup)."""
    load_ipa_backend.cache_clear()
    yield
    load_ipa_backend.cache_clear()


def espeak_cli(text: str, language: str) -> str:
    """espeak-ng's own IPA of `text`, words joined by one space (one line per clause on its output)."""
    result = subprocess.run(
        ["espeak-ng", "-q", "--ipa", "-v", language, text], capture_output=True, text=True, check=True, timeout=60
    )
    return " ".join(result.stdout.split())


def unpunctuated(ipa: str) -> str:
    return " ".join(ipa.translate(str.maketrans("", "", PUNCTUATION)).split())


@needs_espeak
@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en-us", "The kettle started to whistle, just as the phone rang!"),
        ("en-us", "Is it 3 o'clock already?"),
        ("de", "Guten Morgen, wie geht es Ihnen?"),
        ("es", "El perro corre por la calle."),
    ],
)
def test_tokens_joined_are_espeak_ngs_ipa(language: str, text: str) -> None:
    name = "ipa" if language == "en-us" else f"ipa:{language}"
    tokens = get_tokenizer(name)(text)
    assert all(len(token) == 1 for token in tokens)  # one token per IPA character
    assert unpunctuated("".join(tokens)) == espeak_cli(text, language)
    # Word boundaries are the space token, and the punctuation stays where it was.
    assert " " in tokens and tokens[-1] == text[-1]
    assert "," in tokens or "," not in text
    # Stress is kept, as its own token.
    assert "ˈ" in tokens


@needs_espeak
def test_a_language_reads_its_own_phonemes() -> None:
    german = get_tokenizer("ipa:de")("Schön, danke.")
    assert "".join(german) == "ʃˈøːn, dˈaŋkə."
    english = get_tokenizer("ipa")("Schön, danke.")
    assert "ø" not in english and english != german
    spanish = get_tokenizer("ipa:es")("perro")
    assert "r" in spanish  # the trill, which English does not have: "perro" read in en-us has none
    assert "r" not in get_tokenizer("ipa")("perro")


@needs_espeak
def test_ids_to_tokens_to_ids_round_trip() -> None:
    texts = ["The kettle started to whistle.", "Please leave your muddy boots by the back door!"]
    tokenize = get_tokenizer("ipa")
    vocab = Vocab(build_vocab(tokenize(text) for text in texts).tokens)
    encoder = TextEncoder("ipa", vocab)
    batch = encoder.encode(texts)
    assert not batch.unknown
    for row, length, text in zip(batch.ids.tolist(), batch.lengths.tolist(), texts, strict=True):
        tokens = [vocab.tokens[i] for i in row[:length]]
        assert "".join(tokens) == ipa_transcribe([text])[0]
        assert encoder.ids(tokens) == row[:length]  # the tokens, given as a tokenized text, give the same ids


@needs_espeak
def test_a_phoneme_the_vocab_lacks_becomes_id_0_and_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    english = Vocab(build_vocab([get_tokenizer("ipa")("the cat and dog")]).tokens)  # "n", "ˈ", "ː"; no "ø", "ʃ"
    encoder = TextEncoder("ipa:de", english)
    with caplog.at_level(logging.WARNING):
        batch = encoder.encode(["Schön"])  # ʃˈøːn
    tokens = list("ʃˈøːn")
    expected = [english.token_to_id.get(token, 0) for token in tokens]
    assert batch.ids.tolist() == [expected]
    assert batch.unknown["ʃ"] == 1 and batch.unknown["ø"] == 1 and "n" not in batch.unknown
    assert "not in vocab" in caplog.text and "'ø'" in caplog.text


@needs_espeak
def test_batch_transcription_keeps_every_text_in_its_place() -> None:
    # phonemizer would drop an empty line and shift the later texts; a text with nothing to say stays "".
    texts = ["one", "", "   ", "two\nthree", "-", "four"]
    got = ipa_transcribe(texts)
    assert got[0] == ipa_transcribe(["one"])[0] and got[5] == ipa_transcribe(["four"])[0]
    assert got[1:3] == ["", ""] and got[4] == ""
    assert got[3] == espeak_cli("two three", "en-us")
    assert get_tokenizer("ipa")("") == []


@needs_espeak
@pytest.mark.parametrize(
    ("text", "number", "times"),
    [("1.1.", "wˈʌn", 2), ("1.1. 2.2.", "tˈuː", 2), ("1.1.1.1.", "wˈʌn", 4), ("Version 1.1. is out.", "wˈʌn", 2)],
)
def test_a_text_phonemizer_answers_in_several_lines_stays_one_text(text: str, number: str, times: int) -> None:
    # phonemizer answers "1.1." with two lines; in a batch the next text would get the second one.
    alone = ipa_transcribe([text])[0]
    assert alone.count(number) == times and "\n" not in alone  # every line of it, in one transcription
    hello, world = ipa_transcribe(["hello"])[0], ipa_transcribe(["world"])[0]
    assert ipa_transcribe([text, "hello", text, "world"]) == [alone, hello, alone, world]
    assert get_tokenizer("ipa")(text) == list(alone)


@needs_espeak
def test_threads_each_get_their_own_texts_phonemes() -> None:
    # espeak-ng keeps one buffer per process: unlocked, a thread's text came back as another's ("eight" as "two").
    texts = [f"number {word}, said speaker {i}." for i, word in enumerate(["two", "eight", "five", "nine"])]
    expected = {text: ipa_transcribe([text])[0] for text in texts}

    def speak(text: str) -> list[str]:
        return [ipa_transcribe([text])[0] for _ in range(150)]

    with ThreadPoolExecutor(len(texts)) as pool:
        answers = dict(zip(texts, pool.map(speak, texts), strict=True))
    wrong = {text: sum(got != expected[text] for got in answers[text]) for text in texts}
    assert wrong == dict.fromkeys(texts, 0)


@needs_espeak
def test_an_unknown_language_is_refused_at_set_up_in_one_line(fresh_backends: None) -> None:
    with pytest.raises(ValueError, match=r"ipa:xx.*data\.tokenizer.*does not know the language 'xx'") as excinfo:
        TextEncoder("ipa:xx", Vocab([" "]))
    assert "\n" not in str(excinfo.value)
    with pytest.raises(ValueError, match="close ones: .*en-gb"):
        get_tokenizer("ipa:en-gbb")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ipa:DE", "after 'ipa:' comes an espeak-ng language code"),
        ("ipa:", "after 'ipa:' comes an espeak-ng language code"),
        ("char:de", "only ipa takes a language"),
        ("phonemes", "choose one of: char, byte, pinyin, ipa"),
    ],
)
def test_the_config_refuses_a_malformed_tokenizer(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as excinfo:
        compose_config(["+recipe=debug_tiny", f"data.tokenizer={value}"])
    assert str(excinfo.value).startswith(f"data.tokenizer={value!r}") and "\n" not in str(excinfo.value)


def test_the_config_takes_ipa_with_a_language() -> None:
    # The form alone is checked here, so a config is read without espeak-ng; the language, at set-up (above).
    assert compose_config(["+recipe=debug_tiny", "data.tokenizer=ipa:en-gb-x-rp"]).data.tokenizer == "ipa:en-gb-x-rp"


def test_missing_phonemizer_says_how_to_install(monkeypatch: pytest.MonkeyPatch, fresh_backends: None) -> None:
    # A None entry in sys.modules makes the import fail as if phonemizer were not installed.
    monkeypatch.setitem(sys.modules, "phonemizer.backend", None)
    with pytest.raises(ImportError, match=r"pip install 'f5lite\[ipa\]'.*apt-get install espeak-ng") as excinfo:
        get_tokenizer("ipa")
    assert "\n" not in str(excinfo.value)


@pytest.mark.skipif(MISSING is not None and "phonemizer" in MISSING, reason="phonemizer is not installed")
def test_missing_espeak_ng_says_how_to_install(monkeypatch: pytest.MonkeyPatch, fresh_backends: None) -> None:
    from phonemizer.backend import EspeakBackend

    monkeypatch.setattr(EspeakBackend, "is_available", classmethod(lambda cls: False))
    with pytest.raises(ImportError, match=r"needs espeak-ng.*apt-get install espeak-ng") as excinfo:
        TextEncoder("ipa:de", Vocab([" "]))  # at set-up, not at the first batch
    assert "\n" not in str(excinfo.value)


@needs_espeak
@pytest.mark.heavy
def test_prepare_train_export_and_speak_with_ipa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = demo_dir()
    rows = (demo / "metadata.csv").read_text(encoding="utf-8").splitlines()
    # 24 demo utterances, their audio by absolute path, so that nothing is copied.
    source = tmp_path / "metadata.csv"
    source.write_text("\n".join([rows[0], *(f"{demo}/{row}" for row in rows[1:25])]) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    result = prepare(source, data, PrepareOptions(tokenizer="ipa"))
    assert len(result.cuts) == 24
    vocab = load_vocab(data / "vocab.txt")
    assert {"ˈ", "ə", "ɹ", "ː", ",", "."} <= set(vocab.tokens) and "e" in vocab and "E" not in vocab
    assert json.loads((data / "report.json").read_text())["vocab"]["tokenizer"] == "ipa"

    run = tmp_path / "run"
    Trainer(compose_config(overrides(run, f"data.dir={data}", "data.tokenizer=ipa", "optim.max_updates=2"))).fit()
    loaded = load_model(run)  # the run's own config says how its texts were tokenized
    assert loaded.encoder.tokenizer == "ipa" and loaded.encoder.num_embeds == len(vocab)

    export = export_run(run, tmp_path / "export")
    assert json.loads((export / "config.json").read_text())["tokenizer"] == "ipa"
    transcribed: list[str] = []

    def spy(texts: list[str], language: str = "en-us") -> list[str]:
        transcribed.extend(texts)
        return real(texts, language)

    real = ipa_module.ipa_transcribe
    monkeypatch.setattr(ipa_module, "ipa_transcribe", spy)
    synth = Synthesizer.from_pretrained(export, "griffin_lim", dtype="fp32", compile=False, duration="rule")
    reference = demo / rows[1].split("|")[0]
    audio, rate = synth.synthesize(
        "Leave the boots.", reference, rows[1].split("|")[1], SamplerOptions(steps=2), seed=0
    )
    assert rate == 24000 and audio.numel() > 0 and torch.isfinite(audio).all()
    assert any(text.endswith("Leave the boots.") for text in transcribed)  # phonemized, as training was


def test_an_export_records_the_language_with_the_tokenizer(tmp_path: Path) -> None:
    # The language is part of the tokenizer's name, so an export (and all that records the name) keeps it.
    model = tiny_backbone("dit").eval()
    vocab = load_vocab(Path(__file__).parents[1] / "assets" / "f5tts_compat" / "vocab.txt")
    config = DiTConfig(**{**TINY["dit"], "dropout": 0.0})
    out = save_pretrained(tmp_path / "export", model, config, vocab, tokenizer="ipa:de")
    assert load_pretrained(out)[1].tokenizer == "ipa:de"
    with pytest.raises(PretrainedError, match="only ipa takes a language"):
        save_pretrained(tmp_path / "bad", model, config, vocab, tokenizer="char:de")


def test_prepare_cli_refuses_a_malformed_tokenizer(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as excinfo:
        prepare_main(["in", "out", "--tokenizer", "ipa:German"])
    assert excinfo.value.code == 2
    assert "--tokenizer='ipa:German' is not valid: after 'ipa:'" in capsys.readouterr().err


@needs_espeak
@pytest.mark.parametrize("tokenizer", ["ipa", "ipa:de"])
def test_letters_prepared_data_is_refused_for_a_phoneme_run(tokenizer: str, tmp_path: Path) -> None:
    # The demo data was prepared with --tokenizer char: its stored ids are letters, which an ipa run would read
    # as phonemes while its inference phonemizes; and ipa data in another language is refused alike.
    cfg = compose_config(["+recipe=debug_tiny", f"data.tokenizer={tokenizer}"]).data
    with pytest.raises(ValueError, match=rf"prepared with --tokenizer char.*data\.tokenizer={tokenizer}\b"):
        build_train_data(cfg, seed=0)
    data = demo_slice(tmp_path / "ipa_data", 4)
    (data / "report.json").write_text(json.dumps({"vocab": {"tokenizer": "ipa:en-us"}}), encoding="utf-8")
    cfg = compose_config(["+recipe=debug_tiny", f"data.dir={data}", f"data.tokenizer={tokenizer}"]).data
    if tokenizer == "ipa":  # "ipa" is "ipa:en-us"
        assert build_train_data(cfg, seed=0, audio=False).encoder.tokenizer == "ipa"
    else:
        with pytest.raises(ValueError, match="prepared with --tokenizer ipa:en-us"):
            build_train_data(cfg, seed=0)

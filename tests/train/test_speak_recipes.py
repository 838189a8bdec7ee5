"""The from-scratch recipes of issue 41 (`speak_cpu`: IPA and spread text; `speak_cpu_char`: F5-TTS's layout): they
compose, train a few updates on `make speak-corpus`'s data (a few sentences of it) and export; a spread or IPA model
is refused F5-TTS's format in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.scripts import load_script

from f5lite.config import compose_config

ESPEAK = shutil.which("espeak-ng") is not None


def test_the_recipes_differ_only_in_the_text() -> None:
    ipa, char = compose_config(["+recipe=speak_cpu"]), compose_config(["+recipe=speak_cpu_char"])
    assert (ipa.data.tokenizer, ipa.model.text_fit) == ("ipa", "spread")
    assert (char.data.tokenizer, char.model.text_fit) == ("char", "pad")
    for section in ("optim", "ema", "perf", "ckpt"):
        assert getattr(ipa, section) == getattr(char, section), section
    assert {k: v for k, v in vars(ipa.model).items() if k != "text_fit"} == {
        k: v for k, v in vars(char.model).items() if k != "text_fit"
    }


def test_f5tts_format_is_refused_for_each_reason_alone(tmp_path: Path) -> None:
    from f5lite.train.export import _check_f5tts_can_load

    with pytest.raises(ValueError, match="model.text_fit=spread, which F5-TTS has no code for"):
        _check_f5tts_can_load(tmp_path, compose_config(["+recipe=speak_cpu_char", "model.text_fit=spread"]))
    with pytest.raises(ValueError, match=r"reads IPA \(ipa:de\), which F5-TTS has no tokenizer for"):
        _check_f5tts_can_load(
            tmp_path, compose_config(["+recipe=speak_cpu", "model.text_fit=pad", "data.tokenizer=ipa:de"])
        )
    _check_f5tts_can_load(tmp_path, compose_config(["+recipe=speak_cpu_char"]))  # characters, padded: F5-TTS's own


@pytest.fixture(scope="module")
def ipa_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ESPEAK:
        pytest.skip("needs espeak-ng (Debian/Ubuntu: apt-get install espeak-ng)")
    pytest.importorskip("phonemizer")
    module = load_script("make_speak_corpus")
    out = tmp_path_factory.mktemp("speak") / "corpus"
    argv = ["--out", str(out), "--train", "10", "--test", "2", "--val", "2", "--workers", "1", "--tokenizer", "ipa"]
    assert module.main(argv) == 0
    return out


@pytest.mark.heavy  # a corpus made and two updates of the recipe's model (about 20 s); `make test-heavy`
def test_speak_cpu_trains_and_its_model_has_no_f5tts_format(ipa_corpus: Path, tmp_path: Path, capsys) -> None:
    from f5lite.storage.model_sources import load_source
    from f5lite.train.cli import main as train
    from f5lite.train.export import main as export

    run = tmp_path / "run"
    overrides = ["+recipe=speak_cpu", f"data.dir={ipa_corpus}", f"run_dir={run}", "optim.max_updates=2",
                 "ckpt.every=2", "eval.every=0", "data.num_workers=0", "data.frames_per_gpu=1500", "logger.every=1"]  # fmt: skip
    assert train(overrides) == 0
    loaded = load_source(run / "export")
    assert loaded.tokenizer == "ipa" and loaded.backbone.text_embed.fit == "spread"
    capsys.readouterr()
    assert export([str(run), "--out", str(tmp_path / "f5tts"), "--format", "f5tts"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.text_fit=spread, which F5-TTS has no code for" in err and "\n" not in err
    assert not (tmp_path / "f5tts").exists()

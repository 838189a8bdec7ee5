"""The duration predictor's files: round trips, the token-table check, one-line errors for every broken file, the
directory rules of `save_duration`, and the estimator that the `duration` setting resolves to."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from f5lite.infer.duration import DurationEstimator, resolve_duration
from f5lite.models.duration import DurationPredictor
from f5lite.sampling import estimate_duration, predicted_duration
from f5lite.storage.duration_files import (
    CONFIG_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
    DurationFileError,
    LoadedDuration,
    has_duration,
    load_duration,
    save_duration,
    write_duration_files,
)
from f5lite.text import TextEncoder, Vocab, write_vocab

VOCAB = Vocab([" ", *"abcdefghijklmnopqrstuvwxyz.,"])
TEXTS = ["a cab.", "hello, world", "z", "the quick brown fox jumps over the lazy dog."]


def make_predictor(num_embeds: int = len(VOCAB), seed: int = 0) -> DurationPredictor:
    """A small predictor with seeded, non-trivial weights, in eval mode."""
    torch.manual_seed(seed)
    model = DurationPredictor(num_embeds, dim=16, depth=2, kernel_size=3)
    with torch.no_grad():
        model.head.bias.fill_(1.5)  # a few frames a token, like a trained one
    return model.eval()


def outputs(predictor: DurationPredictor, encoder: TextEncoder, texts: list[str] = TEXTS) -> torch.Tensor:
    """The predictor's log-frames of `texts` encoded by `encoder`."""
    with torch.no_grad():
        return predictor(encoder.encode(texts).ids)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A directory of its own holding a char predictor over VOCAB, trained for 123 updates."""
    return save_duration(tmp_path / "duration", make_predictor(), "char", VOCAB, 123)


def one_line_error(directory: Path, **kwargs: object) -> str:
    """Load `directory`, expecting a one-line DurationFileError (a ValueError) that names it; return its message."""
    with pytest.raises(DurationFileError) as info:
        load_duration(directory, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message and message.strip()
    assert str(directory) in message
    return message


# ---------------------------------------------------------------------------------------------------------- round trips


def test_a_saved_predictor_loads_back_the_same(saved: Path) -> None:
    """Same log-frames on the same texts, an encoder that tokenizes as the original, the updates, eval mode."""
    assert sorted(p.name for p in saved.iterdir()) == [CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE]
    assert has_duration(saved)
    loaded = load_duration(saved)
    assert isinstance(loaded, LoadedDuration)
    original = TextEncoder("char", VOCAB)
    assert loaded.encoder.tokenizer == "char" and loaded.encoder.vocab is not None
    assert loaded.encoder.vocab.tokens == VOCAB.tokens
    assert torch.equal(loaded.encoder.encode(TEXTS).ids, original.encode(TEXTS).ids)
    assert torch.allclose(outputs(loaded.predictor, loaded.encoder), outputs(make_predictor(), original), atol=1e-6)
    assert loaded.trained_updates == 123
    assert not loaded.predictor.training
    assert next(loaded.predictor.parameters()).dtype == torch.float32


def test_the_config_records_the_architecture(saved: Path) -> None:
    """duration.json names the format and the constructor arguments that rebuild the weights' shapes."""
    config = json.loads((saved / CONFIG_FILE).read_text(encoding="utf-8"))
    assert config["format"] == "f5lite-duration" and config["format_version"] == 1
    assert config["model"] == {"text_num_embeds": len(VOCAB), "dim": 16, "depth": 2, "kernel_size": 3}
    assert config["tokenizer"] == "char" and isinstance(config["vocab_sha256"], str)
    assert config["trained_updates"] == 123


def test_a_byte_predictor_needs_no_vocab(tmp_path: Path) -> None:
    """The byte tokenizer: no vocab.txt written, none needed to load, same outputs."""
    out = save_duration(tmp_path / "bytes", make_predictor(256, seed=1), "byte", None, 9)
    assert not (out / VOCAB_FILE).exists()
    loaded = load_duration(out)
    assert loaded.encoder.tokenizer == "byte" and loaded.encoder.vocab is None
    texts = [*TEXTS, "é ü 中"]
    expected = outputs(make_predictor(256, seed=1), TextEncoder("byte"), texts)
    assert torch.allclose(outputs(loaded.predictor, loaded.encoder, texts), expected, atol=1e-6)
    assert loaded.trained_updates == 9
    assert load_duration(out, tokenizer="byte").encoder.tokenizer == "byte"


# ---------------------------------------------------------------------------------------------------------- exports


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """An export-like directory (the model's vocab.txt and weights) with the predictor's two files added."""
    root = tmp_path / "export"
    root.mkdir()
    write_vocab(root / VOCAB_FILE, VOCAB)
    (root / "model.safetensors").write_bytes(b"not read here")
    write_duration_files(root, make_predictor(), "char", VOCAB, 40)
    return root


def test_an_export_s_predictor_loads_with_the_model_s_tokenizer_and_vocab(export: Path) -> None:
    """Given the export's own tokenizer and token table, it loads and gives the original's outputs."""
    assert has_duration(export)
    assert sorted(p.name for p in export.iterdir()) == [CONFIG_FILE, WEIGHTS_FILE, "model.safetensors", VOCAB_FILE]
    loaded = load_duration(export, tokenizer="char", vocab=VOCAB)
    expected = outputs(make_predictor(), TextEncoder("char", VOCAB))
    assert torch.allclose(outputs(loaded.predictor, loaded.encoder), expected, atol=1e-6)
    assert loaded.trained_updates == 40


def test_another_token_table_is_refused(export: Path) -> None:
    """The same size but one token changed: its ids would mean other tokens, so loading refuses, in one line."""
    other = Vocab([*VOCAB.tokens[:-1], "!"])
    assert len(other) == len(VOCAB)
    message = one_line_error(export, tokenizer="char", vocab=other)
    assert "token table" in message


def test_another_tokenizer_is_refused(export: Path) -> None:
    """A model reading byte (or pinyin) ids cannot use a predictor of char ids."""
    assert "'char'" in one_line_error(export, tokenizer="byte")
    assert "'pinyin'" in one_line_error(export, tokenizer="pinyin", vocab=VOCAB)


def test_a_directory_without_the_files_is_no_predictor(tmp_path: Path) -> None:
    """has_duration is False for an export written before the predictor existed."""
    root = tmp_path / "old_export"
    root.mkdir()
    write_vocab(root / VOCAB_FILE, VOCAB)
    assert not has_duration(root)
    assert not has_duration(tmp_path / "missing")


# ---------------------------------------------------------------------------------------------------------- broken files


def edit_config(change: Callable[[dict], None]) -> Callable[[Path], None]:
    """A damage that rewrites duration.json after `change` edits it in place."""

    def damage(root: Path) -> None:
        path = root / CONFIG_FILE
        config = json.loads(path.read_text(encoding="utf-8"))
        change(config)
        path.write_text(json.dumps(config), encoding="utf-8")

    return damage


def write(name: str, data: bytes) -> Callable[[Path], None]:
    """A damage that replaces file `name` by `data`."""
    return lambda root: (root / name).write_bytes(data)


def truncate(name: str) -> Callable[[Path], None]:
    """A damage that keeps the first half of file `name`."""

    def damage(root: Path) -> None:
        data = (root / name).read_bytes()
        (root / name).write_bytes(data[: len(data) // 2])

    return damage


def remove(name: str) -> Callable[[Path], None]:
    """A damage that deletes file `name`."""
    return lambda root: (root / name).unlink()


DAMAGES: dict[str, Callable[[Path], None]] = {
    "no duration.json": remove(CONFIG_FILE),
    "duration.json a directory": lambda root: (remove(CONFIG_FILE)(root), (root / CONFIG_FILE).mkdir()),
    "invalid JSON": write(CONFIG_FILE, b'{"format": "f5lite-duration", '),
    "not UTF-8": write(CONFIG_FILE, b"\xff\xfe{}"),
    "a JSON list": write(CONFIG_FILE, b"[1, 2]"),
    "another format": edit_config(lambda c: c.update(format="f5lite-export")),
    "no format": edit_config(lambda c: c.pop("format")),
    "a newer format_version": edit_config(lambda c: c.update(format_version=2)),
    "no format_version": edit_config(lambda c: c.pop("format_version")),
    "no model": edit_config(lambda c: c.pop("model")),
    "model not a mapping": edit_config(lambda c: c.update(model=[16, 2])),
    "no model dim": edit_config(lambda c: c["model"].pop("dim")),
    "model dim not a number": edit_config(lambda c: c["model"].update(dim="wide")),
    "model dim 0": edit_config(lambda c: c["model"].update(dim=0)),
    "an even kernel": edit_config(lambda c: c["model"].update(kernel_size=4)),
    "no tokenizer": edit_config(lambda c: c.pop("tokenizer")),
    "an unknown tokenizer": edit_config(lambda c: c.update(tokenizer="words")),
    "no vocab_sha256": edit_config(lambda c: c.pop("vocab_sha256")),
    "another vocab_sha256": edit_config(lambda c: c.update(vocab_sha256="0" * 64)),
    "trained_updates not a number": edit_config(lambda c: c.update(trained_updates="many")),
    "weights of another dim": edit_config(lambda c: c["model"].update(dim=32)),
    "weights of another depth": edit_config(lambda c: c["model"].update(depth=3)),
    "weights of another kernel": edit_config(lambda c: c["model"].update(kernel_size=5)),
    "weights of another table size": edit_config(lambda c: c["model"].update(text_num_embeds=len(VOCAB) + 1)),
    "no weights": remove(WEIGHTS_FILE),
    "truncated weights": truncate(WEIGHTS_FILE),
    "empty weights": write(WEIGHTS_FILE, b""),
    "garbage weights": write(WEIGHTS_FILE, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}"),
    "no vocab.txt": remove(VOCAB_FILE),
    "an empty vocab.txt": write(VOCAB_FILE, b""),
    "a vocab.txt of other tokens": write(VOCAB_FILE, b" \nx\ny\nz\n"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_broken_predictor_is_a_one_line_duration_file_error(saved: Path, damage: str) -> None:
    """Every missing, malformed or mismatched file: DurationFileError, one line, naming the directory."""
    DAMAGES[damage](saved)
    one_line_error(saved)


def test_a_missing_directory_or_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    """Neither a path that does not exist nor a plain file loads, and neither gives another exception type."""
    one_line_error(tmp_path / "nowhere")
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    one_line_error(tmp_path / "a_file")


def test_the_broken_file_errors_say_what_is_wrong(saved: Path) -> None:
    """A few messages name the actual problem, not only the directory."""
    edit_config(lambda c: c.update(format_version=2))(saved)
    assert "format_version" in one_line_error(saved)
    edit_config(lambda c: c.update(format_version=1, tokenizer="words"))(saved)
    assert "words" in one_line_error(saved)
    edit_config(lambda c: (c.update(tokenizer="char"), c.pop("model")))(saved)
    assert "model" in one_line_error(saved)


# ---------------------------------------------------------------------------------------------------------- save rules


def test_save_refuses_a_directory_of_other_files(tmp_path: Path) -> None:
    """A non-empty directory without a predictor is the user's: refused in one line, its files untouched."""
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(DurationFileError) as info:
        save_duration(user, make_predictor(), "char", VOCAB, 1)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    assert [p.name for p in user.iterdir()] == ["notes.txt"]
    assert (user / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no staging directory left behind


def test_save_refuses_a_file(tmp_path: Path) -> None:
    """A plain file at the target is not replaced."""
    target = tmp_path / "dur"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(DurationFileError):
        save_duration(target, make_predictor(), "char", VOCAB, 1)
    assert target.read_text(encoding="utf-8") == "x"


def test_save_replaces_a_previous_predictor_and_fills_an_empty_directory(tmp_path: Path) -> None:
    """A second save replaces the first whole (its vocab.txt goes with it); an empty directory is fine."""
    out = tmp_path / "dur"
    save_duration(out, make_predictor(), "char", VOCAB, 10)
    save_duration(out, make_predictor(256, seed=5), "byte", None, 20)
    assert sorted(p.name for p in out.iterdir()) == [CONFIG_FILE, WEIGHTS_FILE]
    loaded = load_duration(out)
    assert loaded.trained_updates == 20 and loaded.encoder.tokenizer == "byte"
    expected = outputs(make_predictor(256, seed=5), TextEncoder("byte"))
    assert torch.allclose(outputs(loaded.predictor, loaded.encoder), expected, atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dur"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_duration(save_duration(empty, make_predictor(), "char", VOCAB, 3)).trained_updates == 3


# ---------------------------------------------------------------------------------------------------------- estimator

CASES = [(100, "a cab.", "hello, world", 1.0), (250, " the lazy dog. ", " z ", 1.0), (80, "abc", "xyz, xyz", 2.0)]


def test_without_a_predictor_the_estimator_is_the_byte_rule() -> None:
    """Name 'rule'; total frames exactly `estimate_duration`'s; no log-frames to give."""
    estimator = DurationEstimator()
    assert estimator.name == "rule" and estimator.loaded is None
    for case in CASES:
        assert estimator.total_frames(*case) == estimate_duration(*case)
    with pytest.raises(ValueError, match="no duration predictor"):
        estimator.log_frames(["abc"])


def test_with_a_predictor_the_estimator_uses_its_log_frames_of_the_stripped_texts(saved: Path) -> None:
    """Name 'predictor'; total frames are `predicted_duration` on the log-frames of the texts without edge spaces."""
    loaded = load_duration(saved)
    estimator = DurationEstimator(loaded)
    assert estimator.name == "predictor"
    encoder = TextEncoder("char", VOCAB)
    differs_from_rule = 0
    for ref_frames, ref_text, gen_text, speed in CASES:
        ref_log, gen_log = outputs(make_predictor(), encoder, [ref_text.strip(), gen_text.strip()]).tolist()
        total = estimator.total_frames(ref_frames, ref_text, gen_text, speed)
        assert total == predicted_duration(ref_frames, ref_log, gen_log, speed)
        differs_from_rule += total != estimate_duration(ref_frames, ref_text, gen_text, speed)
    assert differs_from_rule >= 2
    logs = estimator.log_frames(TEXTS)
    assert logs == pytest.approx(outputs(make_predictor(), encoder).tolist(), abs=1e-6)
    assert all(isinstance(v, float) and math.isfinite(v) for v in logs)


def test_the_edge_spaces_of_a_text_do_not_change_the_predictor_s_estimate(saved: Path) -> None:
    """The reference is fed to the model with a trailing space; the predictor learned from bare transcripts."""
    estimator = DurationEstimator(load_duration(saved))
    assert estimator.total_frames(100, " a cab.  ", "  hello ", 1.0) == estimator.total_frames(100, "a cab.", "hello")
    with pytest.raises(ValueError, match="empty"):
        estimator.log_frames(["abc", ""])


def test_resolve_duration_settings(saved: Path) -> None:
    """'auto' takes the model's own predictor or the rule, 'rule' is always the rule, a path loads that directory."""
    own = load_duration(saved)
    assert resolve_duration("auto", None).name == "rule"
    assert resolve_duration("auto", own).loaded is own
    assert resolve_duration("rule", own).name == "rule"
    assert resolve_duration("rule", None).name == "rule"
    for setting in (str(saved), saved):
        from_path = resolve_duration(setting, None)
        assert from_path.name == "predictor" and from_path.loaded is not None
        assert from_path.loaded.trained_updates == 123
        assert from_path.total_frames(*CASES[0]) == DurationEstimator(own).total_frames(*CASES[0])


def test_a_bad_predictor_path_is_a_one_line_value_error(tmp_path: Path) -> None:
    """A path that holds no predictor: ValueError in one line, whatever the model brought."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for setting in (tmp_path / "missing", empty, "autoo"):
        with pytest.raises(ValueError) as info:
            resolve_duration(setting, None)
        assert "\n" not in str(info.value)

"""`f5lite-infer` end to end on a tiny random model with Griffin-Lim, and its one-line errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf
import torch
from support.infer_assets import (
    GEN_TEXT,
    NON_DEFAULT,
    REF_TEXT,
    VOCAB_FILE,
    expected_samples,
    make_model_files,
    make_reference,
    spy_on_sample,
)

from f5lite import SamplerOptions
from f5lite.infer.cli import compose_infer_config, main


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("infer")
    export, checkpoint = make_model_files(root)
    return {"root": root, "export": export, "checkpoint": checkpoint, "ref": make_reference(root)}


def base_args(files, out: Path, **extra: str) -> list[str]:
    args = {
        "model": str(files["export"]),
        "ref_audio": str(files["ref"]),
        "ref_text": REF_TEXT,
        "text": GEN_TEXT,
        "output": str(out),
        "sample.vocoder": "griffin_lim",
        "sample.seed": "1",
        "device": "cpu",
        "sample.steps": "3",
        **extra,
    }
    return [f"{k}={v}" for k, v in args.items()]


@pytest.fixture(scope="module")
def first_wav(files) -> bytes:
    """The wav of one in-process run with seed 1, which the other runs compare against."""
    out = files["root"] / "first.wav"
    assert main(base_args(files, out)) == 0
    return out.read_bytes()


def test_console_script_writes_a_wav_of_the_expected_duration(files, first_wav, tmp_path):
    script = Path(sys.executable).parent / "f5lite-infer"
    out = tmp_path / "out.wav"
    done = subprocess.run([str(script), *base_args(files, out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1/1" in done.stderr  # the progress bar over chunks
    # The path it chose (dtype, compile, threads, guidance batch), one line, whatever this CPU is.
    path_lines = [line for line in done.stderr.splitlines() if line.startswith("f5lite: cpu")]
    assert len(path_lines) == 1 and "weights," in path_lines[0] and "CFG as one batch of 2" in path_lines[0]
    info = sf.info(out)
    assert info.samplerate == 24000 and info.channels == 1
    assert info.frames == expected_samples()
    assert out.read_bytes() == first_wav  # same seed, another process: the same wav


def test_same_seed_same_wav(files, first_wav, tmp_path):
    out = tmp_path / "again.wav"
    assert main(base_args(files, out)) == 0
    assert out.read_bytes() == first_wav


def test_official_checkpoint_with_recipe_gives_the_export_s_output(files, first_wav, tmp_path):
    out = tmp_path / "checkpoint.wav"
    official = {"model": str(files["checkpoint"]), "recipe": "debug_tiny", "vocab": str(VOCAB_FILE)}
    assert main(base_args(files, out, **official)) == 0
    assert out.read_bytes() == first_wav


def test_zero_values_are_accepted(files, first_wav, tmp_path):
    out = tmp_path / "zero.wav"
    args = base_args(files, out, **{"sample.cfg_strength": "0", "sample.sway": "0", "cross_fade": "0"})
    assert main(args) == 0
    cfg = compose_infer_config(args)
    assert (cfg.sample.cfg_strength, cfg.sample.sway, cfg.cross_fade) == (0.0, 0.0, 0.0)
    assert sf.info(out).frames == expected_samples()
    assert out.read_bytes() != first_wav


def test_every_sampler_setting_on_the_command_line_reaches_sample(files, tmp_path, monkeypatch):
    seen = spy_on_sample(monkeypatch)
    out = tmp_path / "options.wav"
    settings = {f"sample.{name}": str(value).lower() for name, value in NON_DEFAULT.items()}
    assert main(base_args(files, out, **{"sample.seed": "7"}, **settings)) == 0
    assert seen == [(SamplerOptions(**NON_DEFAULT), 7)]
    assert sf.info(out).frames == expected_samples(speed=NON_DEFAULT["speed"])


def test_contract_keys_and_free_text_reach_the_config(files, tmp_path):
    text = 'She said: "no, [really], x=1" - fine!'
    cfg = compose_infer_config(
        base_args(
            files, tmp_path / "o.wav", text=text, **{"sample.vocoder_source": "/some/dir", "sample.vocoder": "vocos"}
        )
        + [
            "sample.steps=7",
            "sample.cfg_strength=1.5",
            "sample.cfg_zero_init_steps=1",
            "sample.cfg_zero_star=true",
            "dtype=bf16",
            "compile=true",
        ]
    )
    assert cfg.text == text and cfg.model == str(files["export"]) and cfg.sample.seed == 1
    assert (cfg.sample.vocoder, cfg.sample.vocoder_source) == ("vocos", "/some/dir")
    assert (cfg.sample.steps, cfg.sample.cfg_strength, cfg.sample.cfg_zero_init_steps) == (7, 1.5, 1)
    assert cfg.sample.cfg_zero_star and cfg.device == "cpu" and cfg.dtype == "bf16" and cfg.compile == "true"
    default = compose_infer_config(base_args(files, tmp_path / "o.wav"))
    assert (default.dtype, default.compile, default.threads) == ("auto", "auto", None)  # the machine decides
    assert compose_infer_config([*base_args(files, tmp_path / "o.wav"), "threads=3"]).threads == 3


def test_help_lists_the_contract(capsys):
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    for key in (
        "model=PATH",
        "ref_audio",
        "sample.vocoder_source",
        "sample.cfg_zero_init_steps",
        "sample.seed",
        "device",
    ):
        assert key in shown


def garbage_file(tmp: Path) -> str:
    path = tmp / "garbage.wav"
    path.write_bytes(b"this is not audio")
    return str(path)


def vocab_39(tmp: Path) -> str:
    path = tmp / "vocab39.txt"
    path.write_text("".join(line + "\n" for line in VOCAB_FILE.read_text().splitlines()[:-1]))
    return str(path)


def official(files, **changes: str) -> dict[str, str]:
    return {"model": str(files["checkpoint"]), "recipe": "debug_tiny", "vocab": str(VOCAB_FILE), **changes}


# case -> (the arguments that differ from a good run, given the model files and a scratch folder; the message)
BAD_INPUTS = {
    "missing ref audio": (
        lambda f, t: {"ref_audio": str(t / "nope.wav")},
        r"cannot read audio file .*nope\.wav.*no such",
    ),
    "unreadable ref audio": (lambda f, t: {"ref_audio": garbage_file(t)}, r"cannot read audio file .*garbage\.wav"),
    "empty text": (lambda f, t: {"text": ""}, r"text is empty"),
    "blank text": (lambda f, t: {"text": "   "}, r"text is empty"),
    "empty ref text": (lambda f, t: {"ref_text": ""}, r"ref_text is empty.*ASR model, which f5lite does not ship"),
    "vocab not matching the weights": (
        lambda f, t: official(f, vocab=vocab_39(t)),
        r"vocab does not match the weights: .*39 tokens but model_100\.safetensors was trained with 40",
    ),
    "checkpoint without recipe": (lambda f, t: {"model": str(f["checkpoint"])}, r"give the recipe of its architecture"),
    "recipe not matching the weights": (lambda f, t: official(f, recipe="dit_small"), r"does not fit recipe dit_small"),
    "unknown recipe": (lambda f, t: official(f, recipe="nope"), r"recipe='nope' is not a known recipe"),
    "missing model": (lambda f, t: {"model": str(t / "none")}, r"model .*none does not exist"),
    "folder that is not an export": (
        lambda f, t: {"model": str(t)},
        r"neither an f5lite export directory \(no config\.json\) nor a training run",
    ),
    "unknown key": (lambda f, t: {"colour": "blue"}, r"colour"),
    "bad steps": (lambda f, t: {"sample.steps": "0"}, r"sample\.steps=0 is not valid"),
    "bad method": (lambda f, t: {"sample.method": "rk4"}, r"sample\.method='rk4' is not valid"),
    "zero-init too long": (lambda f, t: {"sample.cfg_zero_init_steps": "3"}, r"cfg_zero_init_steps=3 is not valid"),
    "bad vocoder": (lambda f, t: {"sample.vocoder": "wavenet"}, r"sample\.vocoder='wavenet' is not valid"),
    "text and text file": (lambda f, t: {"text_file": str(t / "t.txt")}, r"exactly one of text=STR and text_file=PATH"),
    "negative cross-fade": (lambda f, t: {"cross_fade": "-0.1"}, r"cross_fade=-0\.1 is not valid"),
    "bad dtype": (lambda f, t: {"dtype": "fp8"}, r"dtype='fp8' is not valid; choose one of: auto, fp32"),
    "bad compile": (lambda f, t: {"compile": "sometimes"}, r"compile='sometimes' is not valid"),
    "zero threads": (lambda f, t: {"threads": "0"}, r"threads=0 is not valid"),
    "output folder missing": (lambda f, t: {"output": str(t / "no" / "o.wav")}, r"directory .* does not exist"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_give_one_line_and_a_nonzero_exit(files, tmp_path, capsys, case):
    changes, pattern = BAD_INPUTS[case]
    assert main(base_args(files, tmp_path / "o.wav", **changes(files, tmp_path))) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("f5lite-infer:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("f5lite-infer: error: ")
    assert re.search(pattern, lines[0]), lines[0]


def test_text_file_is_read_and_a_missing_one_is_reported(files, first_wav, tmp_path, capsys):
    text_file = tmp_path / "story.txt"
    text_file.write_text(GEN_TEXT + "\n", encoding="utf-8")
    args = [a for a in base_args(files, tmp_path / "f.wav") if not a.startswith("text=")]
    assert main([*args, f"text_file={text_file}"]) == 0
    assert (tmp_path / "f.wav").read_bytes() == first_wav
    assert main([*args, f"text_file={tmp_path / 'missing.txt'}"]) == 2
    assert "cannot read text_file" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message for a machine without CUDA")
def test_cuda_without_a_gpu_is_a_clear_error(files, tmp_path, capsys):
    assert main(base_args(files, tmp_path / "o.wav", device="cuda")) == 2
    assert "device='cuda' is not available" in capsys.readouterr().err


def test_spaces_in_the_reference_transcript_are_read_as_one(files, first_wav, tmp_path):
    # Kept, a frame per space would make this one chunk 5,000 frames long (and another wav).
    out = tmp_path / "spaced.wav"
    assert main(base_args(files, out, ref_text="ABC" + " " * 5_000 + "12.")) == 0
    assert out.read_bytes() == first_wav

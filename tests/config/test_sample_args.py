"""The sampler's settings and the model have one spelling in every tool: `sample.KEY=VALUE`, `model=`, `device=`,
`dtype=`, from one schema each, listed by each `--help`.

`f5lite-infer` and `f5lite-eval` compose them with their whole config; `f5lite-serve` and `f5lite-studio` take them
beside their own flags (`f5lite.serve.config`, `f5lite.studio.config`). The same arguments must give the same
settings everywhere, a bad one the same one-line refusal, a spelling of an earlier version a one-line refusal naming
the new one, and every field of the schema must show in every tool's help (so a new sampler setting cannot be
forgotten by a tool).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from f5lite.config.sample import SampleConfig
from f5lite.config.sample_args import sample_keys_help
from f5lite.eval.cli import main as eval_main
from f5lite.infer.cli import compose_infer_config
from f5lite.infer.cli import main as infer_main
from f5lite.infer.config import ModelSource
from f5lite.serve.config import compose_serve_config
from f5lite.studio.config import compose_studio_config


def compose_sample_args(args: list[str], tool: str) -> SampleConfig:
    """The sampler section as `tool` (`f5lite-serve` or `f5lite-studio`) composes it from its `key=value` arguments."""
    if tool == "f5lite-serve":
        return compose_serve_config(["model=m", *args]).sample
    return compose_studio_config(args).sample


ARGS = [
    "sample.steps=7",
    "sample.method=midpoint",
    "sample.schedule=uniform",
    "sample.sway=0.5",
    "sample.cfg_strength=1.5",
    "sample.cfg_zero_init_steps=1",
    "sample.cfg_zero_star=true",
    "sample.speed=1.25",
    "sample.seed=3",
    "sample.vocoder=vocos",
    "sample.vocoder_source=/a/dir,with comma",
]
KEYS = [f"sample.{field.name}" for field in dataclasses.fields(SampleConfig)]


def test_the_server_s_and_studio_s_keys_mean_what_f5lite_infer_s_mean() -> None:
    ours = compose_sample_args(ARGS, "f5lite-serve")
    infer = compose_infer_config(["model=m", "ref_audio=r.wav", "ref_text=R.", "text=Hi.", *ARGS]).sample
    assert ours == infer == compose_sample_args(ARGS, "f5lite-studio")
    assert (ours.steps, ours.method, ours.seed, ours.vocoder, ours.vocoder_source) == (
        7, "midpoint", 3, "vocos", "/a/dir,with comma"
    )  # fmt: skip
    assert compose_sample_args([], "f5lite-serve") == SampleConfig()


@pytest.mark.parametrize(
    ("arg", "words"),
    [
        ("sample.steps=0", "sample.steps=0 is not valid"),
        ("sample.step=3", "sample.step"),
        ("sample.steps=many", "sample.steps"),
        ("steps=3", "Key 'steps' not in"),
        ("sample.vocoder=griffin_lim sample.vocoder_source=/w", "sample.vocoder_source is for vocos"),
    ],
)
def test_a_bad_key_or_value_is_refused_in_one_line_naming_it(arg: str, words: str) -> None:
    with pytest.raises(ValueError, match="^[^\n]*$") as caught:
        compose_sample_args(arg.split(), "f5lite-serve")
    assert words in str(caught.value)


REMOVED = [
    ("seed=3", "seed=3 is no longer accepted; write sample.seed=3"),
    ("vocoder=vocos", "vocoder=vocos is no longer accepted; write sample.vocoder=vocos"),
    ("vocoder_path=/w", "vocoder_path=/w is no longer accepted; write sample.vocoder_source=/w"),
    ("sample.vocoder=griffinlim", "sample.vocoder=griffinlim is no longer accepted; write sample.vocoder=griffin_lim"),
]
"""Spellings of earlier versions, each with the one line that refuses it and names the spelling to write."""


@pytest.mark.parametrize(("arg", "line"), REMOVED)
def test_a_removed_spelling_is_refused_in_every_tool_naming_the_new_one(arg: str, line: str) -> None:
    with pytest.raises(ValueError) as caught:
        compose_sample_args([arg], "f5lite-serve")
    assert str(caught.value) == line
    with pytest.raises(ValueError) as caught:
        compose_infer_config(["model=m", "ref_audio=r.wav", "ref_text=R.", "text=Hi.", arg])
    assert str(caught.value) == line
    new = line.rpartition("; write ")[2]
    assert (
        compose_sample_args([new], "f5lite-serve")
        == compose_infer_config(["model=m", "ref_audio=r.wav", "ref_text=R.", "text=Hi.", new]).sample
    )


def test_the_command_lines_refuse_a_removed_spelling_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert infer_main(["model=m", "ref_audio=r.wav", "ref_text=R.", "text=Hi.", "vocoder=griffinlim"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "f5lite-infer: error: vocoder=griffinlim is no longer accepted; write sample.vocoder=griffin_lim"
    ]
    assert eval_main(["model=m", "testset=t.lst", "output=o", "floor_vocoder=griffinlim"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "f5lite-eval: error: floor_vocoder=griffinlim is no longer accepted; write floor_vocoder=griffin_lim"
    ]


def test_every_tool_s_help_lists_every_sampler_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert all(key in sample_keys_help() for key in KEYS)
    shown = {}
    for tool, main in (("infer", infer_main), ("eval", eval_main)):
        assert main(["--help"]) == 0
        shown[tool] = capsys.readouterr().out
    for module in ("f5lite.serve", "f5lite.studio"):
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        shown[module] = done.stdout
    missing = {tool: [key for key in KEYS if f"{key} (default" not in text] for tool, text in shown.items()}
    assert missing == {tool: [] for tool in shown}


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        (["f5lite.serve", "model=no-such-model", "--port", "0"], "f5lite-serve: error:"),
        (["f5lite.studio"], "f5lite-studio:"),
    ],
)
def test_the_tools_refuse_a_bad_sampler_key_before_loading_anything(
    command: list[str], prefix: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *command, "sample.cfg_strength=-1"], capture_output=True, text=True, timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"{prefix} sample.cfg_strength=-1.0 is not valid; it must be >= 0"]
    assert list(tmp_path.iterdir()) == []  # the studio made no workspace (./studio) for a command it refused


def test_the_model_keys_mean_in_the_server_what_they_mean_in_f5lite_infer() -> None:
    keys = ["model=runs/x,1/export", "device=cpu", "dtype=fp32", "recipe=dit_base", "vocab=v.txt", "compile=false",
            "threads=2", "duration=rule"]  # fmt: skip
    serve = compose_serve_config(keys)
    infer = compose_infer_config([*keys, "ref_audio=r.wav", "ref_text=R.", "text=Hi."])
    source = [f.name for f in fields(ModelSource)]
    assert {name: getattr(serve, name) for name in source} == {name: getattr(infer, name) for name in source}
    assert (serve.model, serve.device, serve.dtype, serve.threads) == ("runs/x,1/export", "cpu", "fp32", 2)
    assert compose_studio_config(["device=cpu"]).device == "cpu"
    for compose in (compose_serve_config, compose_studio_config):
        with pytest.raises(ValueError, match=r"^device='tpu' is not valid; use auto, cpu, cuda or cuda:N$"):
            compose(["model=m", "device=tpu"] if compose is compose_serve_config else ["device=tpu"])


@pytest.mark.parametrize(
    ("command", "line"),
    [
        (["f5lite.serve", "runs/x/export", "--port", "0"],
         "f5lite-serve: error: the model as a positional argument is no longer accepted; write model=runs/x/export"),
        (["f5lite.serve", "model=m", "--device", "cpu"],
         "f5lite-serve: error: --device cpu is no longer accepted; write device=cpu"),
        (["f5lite.serve", "model=m", "--dtype=fp32"],
         "f5lite-serve: error: --dtype=fp32 is no longer accepted; write dtype=fp32"),
        (["f5lite.studio", "--device", "cpu"], "f5lite-studio: --device cpu is no longer accepted; write device=cpu"),
    ],
)  # fmt: skip
def test_the_server_and_studio_refuse_the_model_spellings_of_earlier_versions_in_one_line(
    command: list[str], line: str, tmp_path: Path
) -> None:
    done = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [line]
    assert list(tmp_path.iterdir()) == []

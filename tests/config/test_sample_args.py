"""The sampler's settings have one spelling in every tool: `sample.KEY=VALUE`, from one schema, listed by each `--help`.

`f5lite-infer` and `f5lite-eval` compose them with their whole config; `f5lite-serve` and `f5lite-studio` take them
beside their own flags (`f5lite.config.sample_args`). The same arguments must give the same settings everywhere, a
bad one the same one-line refusal, and every field of the schema must show in every tool's help (so a new sampler
setting cannot be forgotten by a tool).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from f5lite.config.sample_args import compose_sample_args, sample_keys_help
from f5lite.config.schema import SampleConfig
from f5lite.eval.cli import main as eval_main
from f5lite.infer.cli import compose_infer_config
from f5lite.infer.cli import main as infer_main

ARGS = [
    "sample.steps=7",
    "sample.method=midpoint",
    "sample.schedule=uniform",
    "sample.sway=0.5",
    "sample.cfg_strength=1.5",
    "sample.cfg_zero_init_steps=1",
    "sample.cfg_zero_star=true",
    "sample.speed=1.25",
    "seed=3",
    "vocoder=vocos",
    "vocoder_path=/a/dir,with comma",
]
KEYS = [f"sample.{field.name}" for field in dataclasses.fields(SampleConfig)]


def test_the_server_s_and_studio_s_keys_mean_what_f5lite_infer_s_mean() -> None:
    ours = compose_sample_args(ARGS, "f5lite-serve")
    infer = compose_infer_config(["model=m", "ref_audio=r.wav", "ref_text=R.", "text=Hi.", *ARGS]).sample
    assert ours == infer
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
        ("steps=3", "steps=3: not a sampler key"),
        ("--steps=3", "not a sampler key"),
        ("vocoder=griffinlim vocoder_path=/w", "vocoder_path is for vocos"),
    ],
)
def test_a_bad_key_or_value_is_refused_in_one_line_naming_it(arg: str, words: str) -> None:
    with pytest.raises(ValueError, match="^[^\n]*$") as caught:
        compose_sample_args(arg.split(), "f5lite-serve")
    assert words in str(caught.value)


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
    [(["f5lite.serve", "no-such-model", "--port", "0"], "f5lite-serve: error:"), (["f5lite.studio"], "f5lite-studio:")],
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

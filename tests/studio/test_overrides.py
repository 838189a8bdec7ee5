"""What the studio hands to Hydra stays data: the "More overrides" grammar, quoted paths, and kept overrides.

Hydra un-escapes `\\{` to `{` and keeps `${...}` in quoted strings, and OmegaConf then resolves interpolations such
as `${oc.env:VAR}` in whichever process composes the config (the studio's, when Start is pressed). These tests type
every escape form into the Train tab's own handler, with a secret in the studio's environment, check the value
grammar against Hydra's parser and OmegaConf, and tamper with a run's kept `overrides.json` before a resume.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from f5lite.credentials import STUDIO_AUTH_ENV
from f5lite.eval.cli import compose_eval_config
from f5lite.paths import demo_dir
from f5lite.studio import jobs, training
from f5lite.studio.app import build
from f5lite.studio.overrides import check_extra, literal
from f5lite.studio.project import Project, StudioRoot
from f5lite.studio.settings import StudioSettings

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the studio's job handling reads /proc")

SECRET = "studio-login:do-not-show"
PRIVATE = "F5LITE_TEST_PRIVATE"
PRIVATE_VALUE = "a-value-only-the-studio-knows"

TYPED = [
    # What users type, for each family of ALLOWED keys.
    "optim.betas=[0.9,0.999]", "optim.weight_decay=0.01", "optim.eps=1e-8", "optim.eps=1.0e-06",
    "optim.grad_accum=2", "optim.max_grad_norm=1.0", "optim.max_bad_updates=5", "optim.warmup_updates=1_000",
    "perf.compile=true", "perf.compile_mode=max-autotune-no-cudagraphs", "perf.compile_dynamic=null",
    "perf.sdpa_backend=flash", "perf.tf32=False", "perf.pin_memory=false", "perf.ac.mode=selective",
    "perf.ac.every_n=2", "perf.memory_budget=0.5", "perf.dropout=bits", "perf.compile_scope=model", "perf.fp8=true",
    "perf.pack=true", "ema.decay=0.999", "ema.update_every=10", "ema.update_after=100", "ema.device=cpu",
    "model.dim=512", "model.depth=4", "model.heads=8", "model.dropout=0.0", "model.qk_norm=rms_norm",
    "model.text_num_embeds=null", "model.attn_mask_enabled=true", "model.text_fit=spread",
    "model.skip_connect_type=concat", "model.pe_attn_head=-1", "data.tokenizer=ipa:en-us", "data.tokenizer=pinyin",
    "data.mel_type=vocos", "data.max_samples=64", "data.fill_efficiency=0.99", "data.quadratic_duration=null",
    "data.pad_multiple=8", "data.max_skip_ratio=.05", "data.num_workers=0", "data.window=10000",
    "ckpt.keep_last=3", "ckpt.best_metric=val/loss", "ckpt.best_metric=prompts/wer", "ckpt.async=true",
    "ckpt.export_dtype=bf16", "ckpt.stop_timeout_s=25.5", "sample.steps=16", "sample.method=midpoint",
    "sample.schedule=epss", "sample.sway=-1.0", "sample.cfg_strength=2", "sample.cfg_zero_star=true",
    "sample.speed=+1.2", "sample.seed=7", "eval.metrics=[wer,sim]", "eval.metrics=[]", "eval.language=zh",
    "eval.online=true", "eval.every=500", "eval.max_prompts=8", "logger.every=10", "logger.sample_every=100",
    "finetune.lora.alpha=32", "finetune.lora.dropout=0.05", "finetune.lora.export=adapter",
    "finetune.lora.target_modules=[to_q,to_k,to_v,to_out.0,ff.0.0,ff.2]", "init.use_ema=false", "seed=42",
]  # fmt: skip

ESCAPES = [
    # (value, the character the refusal names unless the value holds `${`): every way Hydra or OmegaConf could be
    # made to find an interpolation, a resolver, a sweep, a function or a glob in a value.
    ("$\\{oc.env:F5LITE_STUDIO_AUTH\\}", "$"),  # Hydra un-escapes \{ and \}: ${oc.env:...}
    ("\\$\\{oc.env:F5LITE_STUDIO_AUTH\\}", "\\"),
    ("$\\\\{oc.env:F5LITE_STUDIO_AUTH}", "$"),
    ("\\${oc.env:F5LITE_STUDIO_AUTH}", "\\"),
    ("'$\\{oc.env:F5LITE_STUDIO_AUTH\\}'", "'"),
    ('"$\\{oc.env:F5LITE_STUDIO_AUTH\\}"', '"'),
    ("'\\${oc.env:F5LITE_STUDIO_AUTH}'", "'"),
    ("$\\{oc.decode:'$\\{oc.env:F5LITE_STUDIO_AUTH\\}'\\}", "$"),
    ("cpu\\,$\\{oc.env:HOME\\}", "\\"),
    ("[wer,$\\{oc.env:F5LITE_STUDIO_AUTH\\}]", "$"),
    ("[wer,'$\\{oc.env:F5LITE_STUDIO_AUTH\\}']", "'"),
    ("str($\\{oc.env:F5LITE_STUDIO_AUTH\\})", "("),
    ("choice(same,cpu)", "("),
    ("range(1,3)", "("),
    ("glob(*)", "("),
    ("{a:1}", "{"),
    ("$HOME", "$"),
    ("*", "*"),
    ("cpu|same", "|"),
    ("same cpu", " "),
    ("cpu\tx", "\t"),
    ("a=b", "="),
    ("ｃｐｕ", "ｃ"),  # noqa: RUF001 - full-width letters are not ASCII letters
]


def parsed_value(value: str) -> Any:
    """The value Hydra's override parser makes of `key=value`, which must be one value (not a sweep)."""
    override = OverridesParser.create().parse_override(f"ema.device={value}")
    assert not override.is_sweep_override(), value
    return override.value()


def assert_plain_data(value: str) -> None:
    """Hydra reads `value` as plain data, which OmegaConf keeps as it is: nothing for it to resolve."""
    data = parsed_value(value)
    scalars = data if isinstance(data, list) else [data]
    assert all(s is None or isinstance(s, str | int | float | bool) for s in scalars), (value, data)
    assert not any("$" in s or "\\" in s for s in scalars if isinstance(s, str)), (value, data)
    assert OmegaConf.to_container(OmegaConf.create({"k": data}), resolve=True) == {"k": data}, value


def test_values_users_type_are_accepted_and_every_escape_is_refused_naming_the_token() -> None:
    assert check_extra(TYPED) == TYPED
    for token in TYPED:
        assert_plain_data(token.partition("=")[2])
    for value, char in ESCAPES:
        token = f"ema.device={value}"
        with pytest.raises(ValueError) as err:
            check_extra(["ema.decay=0.5", token])
        why = "interpolations ('${') are not allowed" if "${" in value else f"{char!r} cannot be in a value"
        assert str(err.value).startswith(f"override {token!r} is refused: {why}"), err.value
    for value in ("same,cpu", "[0.9,[0.8]]", "[0.9,]", "[", "", "[0.9,0.999"):  # sweeps, nesting, broken lists
        with pytest.raises(ValueError, match="is refused: not a value"):
            check_extra([f"optim.betas={value}"])

    # Values users type compose, as the trainer composes them, into the settings they name.
    typed = ["optim.betas=[0.9,0.99]", "ema.device=cpu", "data.tokenizer=ipa:en-us", "eval.metrics=[wer,sim]"]
    typed += ["finetune.lora.target_modules=[to_q,to_out.0]", "sample.sway=-1.0", "optim.eps=1.0e-06"]
    cfg = training.compose(["+recipe=debug_tiny", *check_extra(typed)])
    assert (cfg.optim.betas, cfg.ema.device, cfg.data.tokenizer) == ([0.9, 0.99], "cpu", "ipa:en-us")
    assert (cfg.eval.metrics, cfg.finetune.lora.target_modules) == (["wer", "sim"], ["to_q", "to_out.0"])
    assert (cfg.sample.sway, cfg.optim.eps) == (-1.0, 1e-6)


UNITS = ["a", "1", ".", "-", ":", "/", "+", ",", "[", "]", "$", "{", "}", "\\", "\\{", "\\}", "'", '"', "(", ")", " "]


def test_no_accepted_value_becomes_an_interpolation_a_sweep_or_a_function() -> None:
    """Every value of up to four of these pieces that the field accepts is plain data for Hydra and OmegaConf."""
    accepted = 0
    for size in range(1, 5):
        for pieces in itertools.product(UNITS, repeat=size):
            value = "".join(pieces)
            try:
                check_extra([f"ema.device={value}"])
            except ValueError:
                continue
            accepted += 1
            assert_plain_data(value)
    assert accepted > 1000  # the grammar is not so strict that it refuses everything


def project_with_dataset(tmp_path: Path) -> tuple[StudioRoot, Project]:
    root = StudioRoot(tmp_path / "wo,rk's [x]" / "work space")
    project = root.project("proj", create=True)
    shutil.copytree(demo_dir(), project.folder / "dataset")
    return root, project


def handler(root: StudioRoot, api_name: str) -> Callable[..., Any]:
    """The function a button of the page calls, as the page wires it."""
    page = build(root, StudioSettings(vocoder="griffin_lim"))
    found = next(f.fn for f in page.fns.values() if f.api_name == api_name)
    assert found is not None, api_name
    return found


def plan(extra: str) -> list[Any]:
    """The Train tab's inputs after project and run, with `extra` in More overrides."""
    return ["debug_tiny", "scratch", None, "", 100_000, None, None, "no", 4, 1000, extra]


def test_the_train_button_refuses_escaped_interpolations_and_never_shows_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STUDIO_AUTH_ENV, SECRET)
    monkeypatch.setenv(PRIVATE, PRIVATE_VALUE)
    root, project = project_with_dataset(tmp_path)
    start = handler(root, "start_training")
    try:
        for key in ("ema.device", "optim.eps", "data.tokenizer", "seed", "eval.metrics"):
            for value, _ in ESCAPES[:10]:
                for variable in (STUDIO_AUTH_ENV, PRIVATE):
                    token = f"{key}={value.replace('F5LITE_STUDIO_AUTH', variable)}"
                    with pytest.raises(gr.Error) as err:
                        start("proj", "bad", *plan(f"ema.decay=0.5 {token}"))
                    message = err.value.message
                    assert f"override {token!r} is refused" in message, message
                    assert SECRET not in message and PRIVATE_VALUE not in message, message
        assert not (project.folder / "runs").exists()
    finally:
        for job in (project.folder / "runs").glob("*/studio"):
            jobs.stop(job)  # the code before the fix starts a trainer for a value it lets through


def kept_overrides(project: Project, run: str, overrides: list[Any] | str) -> Path:
    saved = project.folder / "runs" / run / training.JOB_DIR / training.OVERRIDES_FILE
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(overrides if isinstance(overrides, str) else json.dumps(overrides), encoding="utf-8")
    return saved


def test_kept_overrides_are_checked_again_on_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STUDIO_AUTH_ENV, SECRET)
    root, project = project_with_dataset(tmp_path)
    data, folder = project.folder / "dataset", training.run_dir(project, "r")
    base = "/m/$\\{oc.env:F5LITE_STUDIO_AUTH\\}/it's \\$\\{x\\}\\"
    written = training.Plan(
        "debug_tiny", "lora", base=base, base_vocab="/v/a,b [c].txt", vocoder_source="$\\{oc.env:HOME\\}",
        lr=1e-4, frames_per_gpu=2000, extra=("optim.betas=[0.9,0.99]", "ema.device=cpu"),
    ).overrides(data, folder)  # fmt: skip

    # A kept file edited since its run started: Resume refuses it, naming the file and the token, and starts nothing.
    resume = handler(root, "resume_training")
    plain = [t for t in written if not t.startswith(("init.", "finetune."))]
    try:
        for token in (
            "ema.device=$\\{oc.env:F5LITE_STUDIO_AUTH\\}",
            "optim.lr=$\\{oc.env:F5LITE_STUDIO_AUTH\\}",
            "init.weights=$\\{oc.env:F5LITE_STUDIO_AUTH\\}",
            "init.weights='${oc.env:F5LITE_STUDIO_AUTH}'",
            'init.weights="/m/x"',
            "init.weights='/m/x'extra",
            "data.dir=/etc",
            "+recipe=debug_tiny,demo",
            "hydra.run.dir=/tmp/x",
            "+foo=1",
        ):
            saved = kept_overrides(project, "t", [*plain, token])
            with pytest.raises(gr.Error) as err:
                resume("proj", "t")
            assert err.value.message.startswith(f"{saved}: override {token!r} is refused: "), err.value.message
            assert SECRET not in err.value.message
        for content, why in (
            ('{"a": 1}', "is not a list of overrides"),
            ("[1]", "is not a list"),
            ("[", "cannot be read"),
        ):
            saved = kept_overrides(project, "t", content)
            with pytest.raises(gr.Error, match=f"{re.escape(str(saved))}.*{why}"):
                resume("proj", "t")
        assert not (project.folder / "runs" / "t" / training.JOB_DIR / jobs.JOB_FILE).exists()
    finally:
        jobs.stop(project.folder / "runs" / "t" / training.JOB_DIR)  # the code before the fix starts the trainer

    # A plan's own overrides read back as they were written: paths byte for byte, `$\{` and `\$\{` in them included.
    assert training.read_overrides(kept_overrides(project, "r", written)) == written
    cfg = training.compose(written)
    assert (cfg.init.weights, cfg.data.dir, cfg.run_dir) == (base, str(data), str(folder))
    assert SECRET not in OmegaConf.to_yaml(OmegaConf.structured(cfg))
    # The tool that takes paths verbatim (f5lite-eval, given them through `literal`) takes the same ones as they are.
    evaluated = compose_eval_config([f"{key}={literal(base, key)}" for key in ("model", "testset", "output")])
    assert (evaluated.model, evaluated.testset, evaluated.output) == (base, base, base)

"""Config system: recipes compose, precedence holds, bad values are refused with the key named."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import f5lite.config.model as model_schema
import f5lite.config.train_run as train_run
from f5lite.config import (
    DiTConfig,
    MMDiTConfig,
    OptimConfig,
    PerfConfig,
    TrainConfig,
    UNetTConfig,
    compose_config,
    config_to_yaml,
)
from f5lite.config.reference import config_sections
from f5lite.paths import config_roots

CONFIGS_DIR, RECIPES_DIR = config_roots()
RECIPES = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def test_the_expected_recipes_ship():
    assert {"dit_base", "dit_small", "unett_base", "mmdit_base", "debug_tiny"} <= set(RECIPES)


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_composes(name):
    cfg = compose_config([f"+recipe={name}"])
    assert isinstance(cfg, TrainConfig)
    assert cfg.run_name == name
    assert cfg.run_dir == f"runs/{name}"


def test_recipes_carry_the_f5tts_architectures():
    base = compose_config(["+recipe=dit_base"])
    assert isinstance(base.model, DiTConfig)
    assert (base.model.dim, base.model.depth, base.model.heads, base.model.dim_head) == (1024, 22, 16, 64)
    assert (base.model.ff_mult, base.model.text_dim, base.model.conv_layers) == (2, 512, 4)
    assert base.model.text_mask_padding and base.model.pe_attn_head is None and base.model.qk_norm is None
    assert base.data.tokenizer == "pinyin" and base.data.frames_per_gpu == 38400 and base.data.max_samples == 64
    assert base.optim.lr == 7.5e-5 and base.optim.warmup_updates == 20000 and base.optim.max_grad_norm == 1.0

    small = compose_config(["+recipe=dit_small"])
    assert (small.model.dim, small.model.depth, small.model.heads) == (768, 18, 12)
    assert isinstance(small.model, DiTConfig) and small.model.text_dim == 512 and small.data.tokenizer == "char"

    e2 = compose_config(["+recipe=unett_base"])
    assert isinstance(e2.model, UNetTConfig)
    assert (e2.model.dim, e2.model.depth, e2.model.heads, e2.model.ff_mult) == (1024, 24, 16, 4)
    assert not e2.model.text_mask_padding and e2.model.pe_attn_head == 1 and e2.model.text_dim is None
    assert e2.model.conv_layers == 0 and e2.model.skip_connect_type == "concat"

    assert isinstance(compose_config(["+recipe=mmdit_base"]).model, MMDiTConfig)

    tiny = compose_config(["+recipe=debug_tiny"])
    assert (tiny.model.depth, tiny.model.dim) == (2, 64)
    assert tiny.model.heads * tiny.model.dim_head == tiny.model.dim
    assert tiny.perf.precision == "no"


def test_model_group_switches_the_schema():
    assert isinstance(compose_config([]).model, DiTConfig)
    assert isinstance(compose_config(["model=unett"]).model, UNetTConfig)
    assert isinstance(compose_config(["model=mmdit"]).model, MMDiTConfig)


def test_precedence_with_the_shipped_files():
    # schema (8) < model/dit.yaml (22) < recipe debug_tiny (2) < command line (4)
    assert DiTConfig().depth == 8
    assert compose_config([]).model.depth == 22
    assert compose_config(["+recipe=debug_tiny"]).model.depth == 2
    assert compose_config(["+recipe=debug_tiny", "model.depth=4"]).model.depth == 4


def test_precedence_schema_group_train_recipe_cli(tmp_path):
    # Four optim fields are set at increasing levels; each must keep the value of the highest level that set it.
    configs, recipes = tmp_path / "configs", tmp_path / "recipes"
    (configs / "model").mkdir(parents=True)
    (configs / "optim").mkdir()
    recipes.mkdir()
    (configs / "model" / "dit.yaml").write_text("defaults: [dit_schema, _self_]\n")
    (configs / "optim" / "adamw.yaml").write_text(
        "warmup_updates: 1\nmax_updates: 1\ngrad_accum: 1\nmax_grad_norm: 1.5\n"
    )
    (configs / "train.yaml").write_text(
        "defaults: [train_schema, {model: dit}, {optim: adamw}, _self_]\n"
        "optim: {max_updates: 2, grad_accum: 2, max_grad_norm: 2.5}\n"
    )
    (recipes / "r.yaml").write_text("# @package _global_\noptim: {grad_accum: 3, max_grad_norm: 3.5}\n")
    cfg = compose_config(["+recipe=r", "optim.max_grad_norm=4.5"], configs_dir=configs, recipes_dir=recipes)
    assert cfg.optim.lr == OptimConfig().lr  # schema default, nobody set it
    assert cfg.optim.warmup_updates == 1  # group
    assert cfg.optim.max_updates == 2  # train.yaml over group
    assert cfg.optim.grad_accum == 3  # recipe over train.yaml
    assert cfg.optim.max_grad_norm == 4.5  # command line over recipe


def test_every_optimization_is_switchable_from_the_command_line():
    cfg = compose_config(
        [
            "+recipe=debug_tiny",
            "perf.compile=true",
            "perf.ac.mode=full",
            "perf.ac.every_n=2",
            "perf.memory_budget=0.5",
            "model.dropout=0",
            "perf.compile_mode=max-autotune-no-cudagraphs",
            "perf.compile_dynamic=true",
            "perf.sdpa_backend=math",
            "perf.tf32=false",
            "perf.pin_memory=false",
            "perf.precision=fp16",
            "ema.device=cpu",
            "ckpt.async=true",
            "ckpt.export_dtype=bf16",
        ]
    )
    assert cfg.perf.compile and cfg.perf.ac.mode == "full" and cfg.perf.ac.every_n == 2
    assert cfg.perf.compile_mode == "max-autotune-no-cudagraphs" and cfg.perf.compile_dynamic is True
    assert cfg.perf.sdpa_backend == "math" and not cfg.perf.tf32 and not cfg.perf.pin_memory
    assert cfg.perf.memory_budget == 0.5 and cfg.perf.precision == "fp16"
    assert cfg.ema.device == "cpu" and cfg.ckpt.async_save and cfg.ckpt.export_dtype == "bf16"
    assert compose_config(["ckpt.async_save=true"]).ckpt.async_save


@pytest.mark.parametrize("given", ["teacher=runs/t", "+teacher=runs/t"])
def test_a_removed_training_key_is_refused_naming_the_new_one(given: str) -> None:
    with pytest.raises(ValueError) as caught:
        compose_config(["+recipe=distill", given])
    assert str(caught.value) == "teacher=runs/t is no longer accepted; write distill.teacher=runs/t"
    assert compose_config(["+recipe=distill", "distill.teacher=runs/t"]).distill.teacher == "runs/t"


def test_ckpt_async_is_the_command_line_name_of_its_field() -> None:
    """`async` is a Python keyword, which no dataclass field can be named: the field is `async_save`."""
    with pytest.raises(SyntaxError):
        compile("class C:\n    async: bool = False\n", "<field>", "exec")
    assert compose_config(["ckpt.async=true"]).ckpt.async_save


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("model=foo", "model"),
        ("model.backbone=foo", "model.backbone"),
        ("model.backbone=unett", "model.backbone"),
        ("sample.steps=-1", "sample.steps"),
        ("sample.steps=0", "sample.steps"),
        ("perf.ac.every_n=-1", "perf.ac.every_n"),
        ("perf.ac.mode=sometimes", "perf.ac.mode"),
        ("perf.precision=fp8", "perf.precision"),
        ("perf.compile_dynamic=false", "perf.compile_dynamic"),
        ("perf.memory_budget=0.5", "perf.memory_budget"),
        ("perf.memory_budget=1.5", "perf.memory_budget"),
        ("ema.device=gpu", "ema.device"),
        ("ckpt.export_dtype=int8", "ckpt.export_dtype"),
        ("data.tokenizer=words", "data.tokenizer"),
        ("optim.lr=0", "optim.lr"),
        ("optim.lr=fast", "optim.lr"),
        ("model.dim=100", "model.dim"),
        ("model.qk_norm=layer", "model.qk_norm"),
        ("model.pe_attn_head=17", "model.pe_attn_head"),
        ("+model.bogus=1", "model.bogus"),
        ("optim=sgd", "optim"),
        ("+recipe=nope", "recipe"),
    ],
)
def test_bad_values_raise_a_value_error_naming_the_key(override, named):
    with pytest.raises(ValueError, match=r"\b" + named.replace(".", r"\.")) as info:
        compose_config([override])
    assert "\n" not in str(info.value)


def test_unett_rejects_an_odd_depth():
    with pytest.raises(ValueError, match=r"model\.depth"):
        compose_config(["model=unett", "model.depth=3"])


def test_schemas_validate_when_built_in_python_too():
    with pytest.raises(ValueError, match=r"perf\.precision"):
        PerfConfig(precision="fp8")
    with pytest.raises(ValueError, match=r"model\.backbone"):
        UNetTConfig(backbone="dit")


def test_yaml_round_trip():
    cfg = compose_config(["+recipe=unett_base", "perf.compile=true"])
    text = config_to_yaml(cfg)
    assert OmegaConf.to_container(OmegaConf.create(text)) == OmegaConf.to_container(OmegaConf.structured(cfg))


def _fields_without_docstring(module) -> list[str]:
    tree = ast.parse(inspect.getsource(module))
    missing = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        body = cls.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                nxt = body[i + 1] if i + 1 < len(body) else None
                documented = (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                )
                if not documented:
                    missing.append(f"{cls.name}.{stmt.target.id}")
    return missing


def _section_modules() -> list[str]:
    """The modules of the training schema: `TrainConfig`'s and each of its sections' (one module per section)."""
    sections = {section.schema.__module__ for section in config_sections(TrainConfig)}
    return sorted(sections | {train_run.__name__})


def test_every_section_lives_beside_the_run_schema_in_a_file_a_reader_can_hold():
    modules = _section_modules()
    # The sampler's settings (`grpo.sample`, `distill.sample`) are defined by the sampler itself.
    owned = [name for name in modules if name != "f5lite.sampling.options"]
    assert len(owned) >= 10 and all(name.startswith("f5lite.config.") for name in owned), modules
    for name in modules:
        lines = inspect.getsource(sys.modules[name]).count("\n")
        assert lines <= 300, f"{name} has {lines} lines"


def test_every_schema_field_has_a_docstring():
    for name in _section_modules():
        assert _fields_without_docstring(sys.modules[name]) == [], name
    assert _fields_without_docstring(model_schema) == []
    assert dataclasses.is_dataclass(TrainConfig)


def _run_config_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "f5lite.config", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_cli_prints_the_config_from_any_directory(tmp_path):
    ok = _run_config_cli(["+recipe=debug_tiny", "perf.ac.mode=full"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    printed = OmegaConf.create(ok.stdout)
    assert printed.run_name == "debug_tiny" and printed.model.dim == 64 and printed.perf.ac.mode == "full"

    bad = _run_config_cli(["+recipe=debug_tiny", "perf.precision=fp8"], tmp_path)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "perf.precision" in bad.stderr and "Traceback" not in bad.stderr


def test_config_roots_prefers_the_checkout(tmp_path):
    configs, recipes = config_roots()
    assert (configs / "train.yaml").is_file() and (recipes / "debug_tiny.yaml").is_file()

    # An installed layout: no pyproject.toml next to the package, the copies shipped inside it.
    site = tmp_path / "site-packages"
    pkg = site / "f5lite"
    (pkg / "_conf" / "configs").mkdir(parents=True)
    (pkg / "_conf" / "recipes").mkdir()
    (site / "configs").mkdir()  # another project's top-level `configs` must not be mistaken for ours
    (site / "recipes").mkdir()
    assert config_roots(pkg) == (pkg / "_conf" / "configs", pkg / "_conf" / "recipes")

    broken = tmp_path / "broken" / "f5lite"
    broken.mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="reinstall"):
        config_roots(broken)


def test_every_backbone_family_has_a_schema_and_a_model_config() -> None:
    from f5lite.config.model import MODEL_SCHEMAS
    from f5lite.models import BACKBONES
    from f5lite.paths import config_roots

    assert set(MODEL_SCHEMAS) == set(BACKBONES)
    assert all((config_roots()[0] / "model" / f"{name}.yaml").is_file() for name in BACKBONES)

"""MkDocs hook: the configuration reference pages, generated from the typed schemas when the site is built.

One page per schema in `SCHEMAS` (training, inference, evaluation): every key with its type, default and docstring,
read by `f5lite.config.reference` from the dataclasses themselves, so the reference cannot drift from the code. The
training page also lists the config groups and recipes from `configs/` and `recipes/` (with their leading comments).
`tests/project/test_docs.py` imports this file to check that each page lists exactly its schema's keys.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml

from f5lite.config import compose
from f5lite.config.model import MODEL_SCHEMAS
from f5lite.config.reference import ConfigKey, ConfigSection, config_reference, config_sections
from f5lite.paths import config_roots

SCHEMAS: dict[str, dict[str, Any]] = {
    "training": {
        "title": "Training configuration",
        "path": "f5lite.config.train_run.TrainConfig",
        "command": "python -m f5lite.train +recipe=NAME key=value ...",
        "primary": "configs/train.yaml",
    },
    "inference": {
        "title": "Inference configuration",
        "path": "f5lite.infer.config.InferConfig",
        "command": "f5lite-infer key=value ...",
        "primary": "configs/infer.yaml",
    },
    "evaluation": {
        "title": "Evaluation configuration",
        "path": "f5lite.eval.config.EvalConfig",
        "command": "f5lite-eval key=value ...",
        "primary": "configs/eval.yaml",
    },
}
"""Each reference page: its title, the schema's import path(s), how its keys are given, its primary YAML file."""

PAGE_DIR = "reference/config"
"""Where the generated pages go, relative to `docs/`."""


def command_line_names(name: str) -> dict[str, str]:
    """The keys of page `name` whose command-line name is not their field's (`ckpt.async`), by the field's key."""
    return dict(compose.COMMAND_LINE_NAMES) if name == "training" else {}


def load_schema(name: str) -> type:
    """The schema class of page `name`."""
    module, _, attr = SCHEMAS[name]["path"].rpartition(".")
    schema: type = getattr(importlib.import_module(module), attr)
    return schema


def _cell(text: str) -> str:
    """Text for a Markdown table cell: pipes outside code spans escaped (the tables extension skips code spans)."""
    parts = text.split("`")
    return "`".join(part if i % 2 else part.replace("|", "\\|") for i, part in enumerate(parts))


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _table(rows: list[ConfigKey]) -> list[str]:
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    for row in rows:
        cells = (_code(row.key), _code(row.type), _code(row.default), row.doc)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines + [""]


def _top(key: str) -> str:
    return key.split(".", 1)[0].removesuffix("[]")


def _sections(schema: type, rows: list[ConfigKey], skip: set[str]) -> list[str]:
    """Top-level keys first, then one heading per top-level section, in declaration order."""
    sections = {s.key: s for s in config_sections(schema)}
    top_keys = [row for row in rows if "." not in row.key]
    lines: list[str] = []
    if top_keys:
        lines += ["## Top-level keys", "", *_table(top_keys)]
    for key, section in sections.items():
        if "." in key or key.endswith("[]") or key in skip:
            continue
        lines += [f"## `{key}`", "", _sub_doc(section), ""]
        lines += _table([row for row in rows if _top(row.key) == key and "." in row.key])
    return lines


def _sub_doc(section: ConfigSection) -> str:
    cls = section.schema
    return f"{section.doc} (`{cls.__module__}.{cls.__qualname__}`)"


def _flatten(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        out: list[str] = []
        for key, value in node.items():
            if key != "defaults":
                out += _flatten(value, f"{prefix}{key}.")
        return out
    return [f"{prefix[:-1]}={_yaml(node)}"]


def _yaml(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _comment(path: Path) -> str:
    """The YAML file's leading comment: its first comment lines, up to an indented (example) line or the YAML.

    A last sentence that only announces the examples (ends with a colon) is left out.
    """
    kept: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# @"):
            continue
        if not line.startswith("#") or line.startswith("#  "):
            break
        kept.append(line.lstrip("#").strip())
    text = " ".join(kept)
    if text.endswith(":"):
        text = text[: text.rstrip(":").rfind(". ") + 1]
    return text


def _groups_and_recipes(configs: Path, recipes: Path) -> list[str]:
    primary = yaml.safe_load((configs / "train.yaml").read_text(encoding="utf-8"))
    chosen = {k: v for item in primary.get("defaults", []) if isinstance(item, dict) for k, v in item.items()}
    lines = [
        "## Config groups",
        "",
        "`configs/train.yaml` picks one option of each group (the default is marked); choose another with "
        "`GROUP=OPTION` (`model=unett`).",
        "",
        "| group | option | what it is | sets |",
        "| --- | --- | --- | --- |",
    ]
    for group in sorted(p for p in configs.iterdir() if p.is_dir()):
        for option in sorted(group.glob("*.yaml")):
            values = yaml.safe_load(option.read_text(encoding="utf-8")) or {}
            mark = " (default)" if chosen.get(group.name) == option.stem else ""
            sets = ", ".join(_code(v) for v in _flatten(values, f"{group.name}.")) or "nothing: the schema defaults"
            lines.append(f"| `{group.name}` | `{option.stem}`{mark} | {_cell(_comment(option))} | {_cell(sets)} |")
    lines += [
        "",
        "## Recipes",
        "",
        "A recipe (`recipes/NAME.yaml`, selected with `+recipe=NAME` from any directory, wheel installs included) "
        "is a short delta over the whole config. `python -m f5lite.config +recipe=NAME` prints what it composes to.",
        "",
        "| recipe | what it is |",
        "| --- | --- |",
    ]
    for recipe in sorted(recipes.glob("*.yaml")):
        lines.append(f"| `{recipe.stem}` | {_cell(_comment(recipe))} |")
    return lines + [""]


def _model_families(configs: Path) -> list[str]:
    lines = [
        "## `model`",
        "",
        "The backbone architecture. The `model` group picks the family (`model=dit`, `model=mmdit`, `model=unett`); "
        "each family has its own schema, so a key of another family is refused. The defaults below are F5-TTS's "
        "constructor defaults; the group file then sets the family's released architecture.",
        "",
    ]
    for family, schema in MODEL_SCHEMAS.items():
        group_file = configs / "model" / f"{family}.yaml"
        sets = ""
        if group_file.is_file():
            values = yaml.safe_load(group_file.read_text(encoding="utf-8")) or {}
            sets = ", ".join(_code(f"model.{v}") for v in _flatten(values))
        lines += [f"### `model={family}`", "", _sub_doc(ConfigSection("model", schema, _doc(schema))), ""]
        if sets:
            lines += [f"`configs/model/{family}.yaml` sets {sets}.", ""]
        lines += _table(config_reference(schema, prefix="model."))
    return lines


def _doc(schema: type) -> str:
    return " ".join((schema.__doc__ or "").split("\n\n")[0].split())


def render_page(name: str) -> str:
    """The Markdown of the reference page `name` (a key of `SCHEMAS`)."""
    info = SCHEMAS[name]
    schema = load_schema(name)
    rows = config_reference(schema)
    where = f"{schema.__module__}.{schema.__qualname__}"
    lines = [
        f"# {info['title']}",
        "",
        f"Generated from the schema `{where}` when this site is built: every key, its type, its default and its "
        "documentation, read from the dataclass and the docstring under each field. Nothing here is copied by hand.",
        "",
        f"Set any key on the command line: `{info['command']}`; a section's keys are dotted (`sample.steps=7`). "
        f"`{info['primary']}` composes the schema, and a bad value stops with one line naming the key. Defaults are "
        "written as YAML writes them (`null` is Python's None).",
        "",
    ]
    named = [f"`{given}` is `{key}`" for given, key in command_line_names(name).items()]
    if named:  # `async` is a Python keyword, which no field can be named
        lines += [f"On the command line {', '.join(named)} (a Python keyword cannot name a field).", ""]
    skip: set[str] = set()
    if name == "training":
        configs, recipes = config_roots()
        lines += [
            "Precedence, lowest first: schema defaults < group file < `configs/train.yaml` < recipe < command line. "
            "`python -m f5lite.config +recipe=NAME key=value ...` prints the composed, validated config as YAML: "
            "exactly what training will use. From Python, `f5lite.config.compose_config([...])` returns the "
            "`TrainConfig`.",
            "",
            *_groups_and_recipes(configs, recipes),
            *_model_families(configs),
        ]
        skip = {"model"}
        rows = [row for row in rows if _top(row.key) != "model"]
    lines += _sections(schema, rows, skip)
    return "\n".join(lines).rstrip() + "\n"


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site's files."""
    from mkdocs.structure.files import File

    for name in SCHEMAS:
        files.append(File.generated(config, f"{PAGE_DIR}/{name}.md", content=render_page(name)))
    return files

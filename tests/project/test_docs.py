"""The documentation: the generated configuration reference, the API pages, and the README's links and commands.

The site itself is built by `make docs` (CI runs it, with warnings as errors); these tests check, fast, what the build
cannot: that the configuration reference lists exactly the keys of each schema (the set computed here through
OmegaConf, independently of the generator), and that the README's links resolve and its commands run as written.

Which README commands run (the rule): a command in a fenced `bash` block is SHORT, and is run as written from the
repository root with the test's environment on PATH, when it is one of

- `make help`;
- `<f5lite console script> --help`;
- `python -m f5lite.config ...` (composes and prints a config, trains nothing).

Every other command is LONG (training, the demo, the test suite, a server) and is checked, not run:

- `make TARGET ...`: TARGET is a documented target of the Makefile (one with a `## ` help text);
- `python -m f5lite.train ...` / `f5lite-train ...`: every `+recipe=NAME` exists in `recipes/` and the arguments
  compose into a valid `TrainConfig` (what a launch checks before anything else);
- `<f5lite console script> ARGS`: the script is declared in `pyproject.toml` and its function imports;
- `mkdocs ...` (also as `.venv/bin/mkdocs`): `mkdocs.yml` exists and the `docs` extra installs mkdocs;
- `pip install ...`: every extra it names (`'.[zh,eval]'`) is declared in `pyproject.toml`;
- `curl ... URL ...` (a call to `f5lite-serve`): the URL's path is a route of `f5lite/serve/app.py` (or a route
  constant of `f5lite/serve/guard.py`).

A command that fits none of these fails the test: a new kind of command needs a rule here first.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf
from support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = ("training", "inference", "evaluation")

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")


def load_hook(name: str) -> ModuleType:
    """A module of `docs/hooks/`, imported from its path as MkDocs does."""
    return load_script(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")


@pytest.fixture(scope="module")
def config_hook() -> ModuleType:
    return load_hook("config_reference")


# --- the configuration reference -------------------------------------------------------------------------------


def table_rows(markdown: str) -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) of every row of the reference's key tables, read back from the Markdown."""
    rows = []
    for line in markdown.splitlines():
        match = re.match(r"^\| `([^`]+)` \| `{1,2} ?(.*?) ?`{1,2} \| `{1,2} ?(.*?) ?`{1,2} \| (.*) \|$", line)
        if match:
            rows.append(match.groups())
    return rows


def is_mapping_value(node: DictConfig) -> bool:
    """A key whose value is a mapping (`grpo.rewards`), not a section of keys (a dataclass)."""
    return OmegaConf.get_type(node) is dict


def omegaconf_keys(node: DictConfig, prefix: str = "") -> set[str]:
    """Every leaf key of a structured config; a list of dataclasses adds `key[].field` for its element's fields."""
    keys: set[str] = set()
    for name in node:
        key = f"{prefix}{name}"
        child = node._get_node(name)
        if isinstance(child, DictConfig) and not is_mapping_value(child):
            if not OmegaConf.is_missing(node, name):  # a MISSING section has no keys of its own (`model`)
                keys |= omegaconf_keys(child, key + ".")
            continue
        keys.add(key)
        element = getattr(child._metadata, "element_type", None) if isinstance(child, ListConfig) else None
        if isinstance(element, type) and hasattr(element, "__dataclass_fields__"):
            keys |= omegaconf_keys(OmegaConf.structured(element), key + "[].")
    return keys


def schema_keys(name: str, schema: type) -> set[str]:
    """The keys of a page's schema, through OmegaConf (the model section: each backbone family's schema)."""
    node = OmegaConf.structured(schema)
    if name != "training":
        return omegaconf_keys(node)
    from f5lite.config.model import MODEL_SCHEMAS

    assert OmegaConf.is_missing(node, "model")  # the `model` group picks one family's schema
    keys = omegaconf_keys(node)
    for family in MODEL_SCHEMAS.values():
        keys |= omegaconf_keys(OmegaConf.structured(family), "model.")
    return keys


@pytest.mark.parametrize("name", PAGES)
def test_the_reference_lists_exactly_the_schema_keys_each_documented(config_hook: ModuleType, name: str) -> None:
    schema = config_hook.load_schema(name)
    rows = table_rows(config_hook.render_page(name))
    listed = [key for key, *_ in rows]
    expected = schema_keys(name, schema)
    assert set(listed) == expected, (sorted(expected - set(listed)), sorted(set(listed) - expected))
    if name != "training":  # on the training page model.* keys repeat once per backbone family
        assert len(listed) == len(set(listed)), "a key is listed twice"
    undocumented = [key for key, _, _, doc in rows if not doc.strip()]
    assert undocumented == [], f"keys without a docstring: {undocumented}"
    assert all(kind.strip() for _, kind, _, _ in rows)


@pytest.mark.parametrize("name", PAGES)
def test_the_reference_defaults_are_the_schema_defaults(config_hook: ModuleType, name: str) -> None:
    """Each key's default, as shown, is what OmegaConf makes of the schema (model keys: per family, checked below)."""
    node = OmegaConf.structured(config_hook.load_schema(name))
    values: dict[str, Any] = {}

    def collect(sub: DictConfig, prefix: str) -> None:
        for key in sub:
            child = sub._get_node(key)
            if isinstance(child, DictConfig) and not is_mapping_value(child):
                if not OmegaConf.is_missing(sub, key):
                    collect(child, f"{prefix}{key}.")
            else:
                container = isinstance(child, (ListConfig, DictConfig))
                values[f"{prefix}{key}"] = OmegaConf.to_container(child) if container else child._value()

    collect(node, "")
    shown = {key: default for key, _, default, _ in table_rows(config_hook.render_page(name))}
    for key, value in values.items():
        assert shown[key] == yaml_default(value), key


def test_each_backbone_familys_defaults_are_its_schemas(config_hook: ModuleType) -> None:
    from f5lite.config.model import MODEL_SCHEMAS

    page = config_hook.render_page("training")
    for family, schema in MODEL_SCHEMAS.items():
        section = page.split(f"### `model={family}`", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
        shown = {key: default for key, _, default, _ in table_rows(section)}
        node = OmegaConf.structured(schema)
        assert shown == {f"model.{key}": yaml_default(node[key]) for key in node}, family


def yaml_default(value: Any) -> str:
    """A default as the reference writes it: YAML's spelling on a command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if value == "???":
        return "(required)"
    if isinstance(value, str):
        return value or '""'
    if isinstance(value, list):
        return "[" + ", ".join(yaml_default(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {yaml_default(item)}" for key, item in value.items()) + "}"
    return repr(value)


def test_the_api_reference_covers_every_module() -> None:
    """Every public module of f5lite appears on one generated page; a new package gets its own page."""
    hook = load_hook("api_reference")
    pages = {name: hook.render_package(name) for name in ["f5lite", *hook.packages()]}
    directives = {line.removeprefix("::: ") for page in pages.values() for line in page.splitlines()}
    for path in (ROOT / "f5lite").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if any(part.startswith("_") for part in parts[1:]) and path.name != "__init__.py":
            continue
        dotted = ".".join(parts[:-1] if path.name == "__init__.py" else parts)
        assert dotted in directives, f"{dotted} is on no API page"


# --- the README --------------------------------------------------------------------------------------------------


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 200


def slug(heading: str) -> str:
    """GitHub's and MkDocs' anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_the_readmes_relative_links_point_to_existing_files_and_headings() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert relative, "the README links into the documentation"
    for link in relative:
        path, _, anchor = link.partition("#")
        target = (README.parent / path).resolve()
        assert target.is_file(), f"README links to {link}: no such file"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), flags=re.MULTILINE)
            assert anchor in {slug(h) for h in headings}, f"README links to {link}: no such heading"


def readme_commands() -> list[str]:
    """The shell commands of the README's fenced bash blocks: continuations joined, comments left in place."""
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip() and not command.strip().startswith("#"):
                commands.append(command.strip())
    return commands


def console_scripts() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return dict(tomllib.load(file)["project"]["scripts"])


def extras() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return dict(tomllib.load(file)["project"]["optional-dependencies"])


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-zA-Z_-]+):.*?## ", text, flags=re.MULTILINE))


def is_short(words: list[str]) -> bool:
    """The rule of the module docstring: which commands are run as written."""
    if words == ["make", "help"]:
        return True
    if len(words) == 2 and words[0] in console_scripts() and words[1] == "--help":
        return True
    return words[:3] == ["python", "-m", "f5lite.config"]


def check_long(words: list[str]) -> None:
    """The checks of a command too long to run (see the module docstring); fails on a command no rule covers."""
    head = words[0]
    if head == "make":
        target = next(word for word in words[1:] if "=" not in word)
        assert target in make_targets(), f"make {target}: no such documented target"
    elif words[:3] == ["python", "-m", "f5lite.train"] or head == "f5lite-train":
        args = words[3:] if head == "python" else words[1:]
        recipes = [arg.split("=", 1)[1] for arg in args if arg.startswith("+recipe=")]
        assert recipes, f"{' '.join(words)}: names no recipe"
        for recipe in recipes:
            assert (ROOT / "recipes" / f"{recipe}.yaml").is_file(), f"no recipe {recipe}"
        from f5lite.config import compose_config

        compose_config(args)
    elif head in console_scripts():
        module, _, function = console_scripts()[head].partition(":")
        assert callable(getattr(importlib.import_module(module), function))
    elif Path(head).name == "mkdocs":
        assert (ROOT / "mkdocs.yml").is_file()
        assert any(dep.startswith("mkdocs") for dep in extras()["docs"])
    elif words[:2] == ["pip", "install"]:
        for word in words[2:]:
            for named in re.findall(r"\[([^\]]+)\]", word):
                for extra in named.split(","):
                    assert extra in extras(), f"pip install names the extra {extra!r}, which pyproject.toml lacks"
    elif head == "curl":
        (url,) = [word for word in words[1:] if word.startswith("http")]
        path = "/" + url.split("://", 1)[1].partition("/")[2]
        routes = re.findall(r'@app\.(?:get|post|delete)\("([^"]+)"\)', (ROOT / "f5lite/serve/app.py").read_text())
        # Routes named by a constant (the guard checks them too): `SPEECH = "/v1/audio/speech"`.
        routes += re.findall(r'^[A-Z]+ = "(/[^"]+)"', (ROOT / "f5lite/serve/guard.py").read_text(), re.MULTILINE)
        assert path in routes, f"curl {url}: f5lite-serve has no route {path}"
    else:
        pytest.fail(f"no rule for the README command {' '.join(words)!r}: add one to tests/project/test_docs.py")


def test_every_readme_command_runs_as_written_or_names_what_exists() -> None:
    commands = [(command, shlex.split(command, comments=True)) for command in readme_commands()]
    assert commands, "the README shows its commands in fenced bash blocks"
    short = [(command, words) for command, words in commands if is_short(words)]
    assert len(short) >= 3, "the README shows some short commands (make help, --help, python -m f5lite.config)"
    for _, words in commands:
        if not is_short(words):
            check_long(words)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    runs = [
        (command, subprocess.Popen(command, shell=True, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for command, _ in short
    ]  # fmt: skip
    for command, process in runs:
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"README command failed: {command}\n{output[-2000:]}"
        assert output.strip(), f"README command printed nothing: {command}"


@pytest.mark.slow
def test_the_site_builds_with_no_warnings(tmp_path: Path) -> None:
    """What `make docs` does (CI runs that): the whole site, warnings as errors, about 20 s."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (make docs installs it)")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "config" / "training" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "api" / "models" / "index.html").is_file()

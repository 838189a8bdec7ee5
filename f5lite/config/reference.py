"""The configuration reference: every key of a dataclass schema with its type, default and docstring.

The schemas document each field with an attribute docstring, a string literal right after the field in the class
body. Python keeps no such string at run time, so it is read back from the class's source with `ast`, walking the
class and its bases (a subclass's docstring wins over its base's). A class that documents its fields in a Google
`Attributes:` section of its own docstring instead (`f5lite.sampling.SamplerOptions`) is read from there.

Nested dataclass fields become dotted keys (`perf.ac.mode`); a list of dataclasses becomes `key[].field`
(`data.sources[].dir`). Defaults are written as YAML spells them on the command line (`null`, `true`, `[0.9, 0.999]`);
a nested section's default is read from the object its `default_factory` makes, so a section built with other values
(`sample: SampleConfig(seed=0)`) shows those. Nothing here is specific to f5lite's schemas: the documentation site
(`docs/hooks/config_reference.py`) and `tests/project/test_docs.py` drive it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from dataclasses import dataclass
from typing import Any

REQUIRED = "(required)"
"""The default shown for a key that has none (a dataclass field without a default, or OmegaConf's `???`)."""

_OMEGACONF_MISSING = "???"
_SECTION_HEADER = re.compile(r"^(Args|Arguments|Attributes|Raises|Returns|Yields|Examples?|Notes?|Warnings?):\s*$")


@dataclass(frozen=True)
class ConfigKey:
    """One key of a schema.

    Attributes:
        key: the dotted key, as given on the command line (`optim.lr`, `data.sources[].dir`).
        type: the field's annotation as written in the source (`int | None`).
        default: the default as YAML writes it (`null`, `true`, `7.5e-05`), or `REQUIRED`.
        doc: the field's docstring on one line (empty when the field has none).
    """

    key: str
    type: str
    default: str
    doc: str


@dataclass(frozen=True)
class ConfigSection:
    """A nested dataclass field: a group of keys.

    Attributes:
        key: the dotted key of the section (`perf`, `perf.ac`, `data.sources[]`).
        schema: the section's dataclass type.
        doc: the field's docstring, else the first paragraph of the class's docstring, on one line.
    """

    key: str
    schema: type
    doc: str


def field_docs(schema: type) -> dict[str, str]:
    """The docstring of each field of a dataclass, read from its source and its bases' sources.

    Args:
        schema: a dataclass type.

    Returns:
        Field name to its docstring, on one line; fields without one are absent.
    """
    docs: dict[str, str] = {}
    for cls in reversed(schema.__mro__):
        if cls is object or not dataclasses.is_dataclass(cls):
            continue
        docs.update(_attributes_section(inspect.getdoc(cls) or ""))
        docs.update(_attribute_docstrings(cls))
    return docs


def config_reference(schema: type, prefix: str = "") -> list[ConfigKey]:
    """Every leaf key of a dataclass schema, nested sections walked recursively, in declaration order.

    Args:
        schema: a dataclass type.
        prefix: put before every key (`"model."` lists a section's keys under its name).

    Returns:
        One row per key that holds a value (sections themselves are not rows; see `config_sections`).

    Raises:
        TypeError: `schema` is not a dataclass type.
    """
    return [row for row in _walk(schema, prefix, None) if isinstance(row, ConfigKey)]


def config_sections(schema: type, prefix: str = "") -> list[ConfigSection]:
    """Every nested section of a dataclass schema (fields whose type is a dataclass, or a list of one).

    Args:
        schema: a dataclass type.
        prefix: put before every key.

    Returns:
        One entry per section, parents before their children.

    Raises:
        TypeError: `schema` is not a dataclass type.
    """
    return [row for row in _walk(schema, prefix, None) if isinstance(row, ConfigSection)]


def format_default(value: Any) -> str:
    """A default value as YAML writes it on a command line: `null`, `true`, `[0.9, 0.999]`, `{}`.

    Args:
        value: a field's default.

    Returns:
        Its text; `REQUIRED` for OmegaConf's missing marker `???`.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if value == _OMEGACONF_MISSING:
            return REQUIRED
        return value if value else '""'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_default(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {format_default(item)}" for key, item in value.items()) + "}"
    return repr(value)


def _walk(schema: type, prefix: str, instance: Any) -> list[ConfigKey | ConfigSection]:
    """Rows and sections of `schema` (defaults from `instance` when given, else from the fields)."""
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        raise TypeError(f"{schema!r} is not a dataclass type")
    hints = typing.get_type_hints(schema)
    docs = field_docs(schema)
    rows: list[ConfigKey | ConfigSection] = []
    for spec in dataclasses.fields(schema):
        key = prefix + spec.name
        hint = hints.get(spec.name)
        has_default, default = _default(spec, instance)
        doc = docs.get(spec.name, "")
        nested = _dataclass_of(hint)
        if nested is not None:
            section_default = default if has_default and dataclasses.is_dataclass(default) else None
            rows.append(ConfigSection(key, nested, doc or _first_paragraph(nested)))
            rows.extend(_walk(nested, key + ".", section_default))
            continue
        element = _list_element_dataclass(hint)
        rows.append(ConfigKey(key, _annotation(spec), format_default(default) if has_default else REQUIRED, doc))
        if element is not None:
            rows.append(ConfigSection(key + "[]", element, _first_paragraph(element)))
            rows.extend(_walk(element, key + "[].", None))
    return rows


def _default(spec: dataclasses.Field[Any], instance: Any) -> tuple[bool, Any]:
    """Whether the field has a default, and the default (from `instance` when one is given)."""
    if instance is not None:
        return True, getattr(instance, spec.name)
    if spec.default is not dataclasses.MISSING:
        return True, spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return True, spec.default_factory()
    return False, None


def _dataclass_of(hint: Any) -> type | None:
    """The dataclass type a field holds directly, else None."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    return None


def _list_element_dataclass(hint: Any) -> type | None:
    """The element type of a `list[SomeDataclass]` field, else None."""
    if typing.get_origin(hint) in (list, tuple):
        args = typing.get_args(hint)
        if args:
            return _dataclass_of(args[0])
    return None


def _annotation(spec: dataclasses.Field[Any]) -> str:
    """The field's annotation as written (a string under `from __future__ import annotations`)."""
    if isinstance(spec.type, str):
        return spec.type
    if isinstance(spec.type, type):
        return spec.type.__name__
    return str(spec.type).replace("typing.", "")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_paragraph(schema: type) -> str:
    doc = inspect.getdoc(schema) or ""
    return _one_line(doc.split("\n\n")[0])


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """`name: docstring` for each string literal right after an annotated assignment in the class body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # no source (built in, or made at run time)
        return {}
    tree = ast.parse(source)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for statement, following in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = _one_line(inspect.cleandoc(following.value.value))
    return docs


def _attributes_section(doc: str) -> dict[str, str]:
    """`name: description` entries of a Google-style `Attributes:` section."""
    entries: dict[str, str] = {}
    lines = doc.splitlines()
    inside, name, indent = False, "", 0
    for line in lines:
        if not line.strip():
            continue
        if not line.startswith(" ") and _SECTION_HEADER.match(line):
            inside = line.startswith("Attributes")
            name = ""
            continue
        if not inside:
            continue
        if not line.startswith(" "):  # back to the docstring's body
            inside = False
            continue
        depth = len(line) - len(line.lstrip())
        match = re.match(r"\s*(\w+)(?:\s*\([^)]*\))?:\s*(.*)", line)
        if match and (not name or depth <= indent):
            name, indent = match.group(1), depth
            entries[name] = match.group(2).strip()
        elif name:
            entries[name] = _one_line(entries[name] + " " + line.strip())
    return entries

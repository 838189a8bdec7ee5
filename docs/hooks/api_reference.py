"""MkDocs hook: the API reference, one page per f5lite package, generated from the package tree when the site builds.

Each package directory under `f5lite/` (one with an `__init__.py`) gets a page `reference/api/<package>.md` that
renders the package's docstring and then each of its modules through mkdocstrings; the top-level modules and the
public API (`f5lite.__all__`) share the page `reference/api/f5lite.md`. The pages are found by walking the tree, so a
module or package that moves needs no edit here, and the navigation entry "API reference" is filled in the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "f5lite"
PAGE_DIR = "reference/api"
"""Where the generated pages go, relative to `docs/`."""
NAV_INDEX = f"{PAGE_DIR}/index.md"
"""The hand-written page the generated ones are listed after in the navigation."""


def packages(root: Path = ROOT / PACKAGE) -> list[str]:
    """The f5lite packages: directories under `root` with an `__init__.py`, sorted."""
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_"))


def modules(directory: Path, dotted: str) -> list[str]:
    """The public modules of a package directory, recursively (`__init__`, `__main__` and `_private` left out)."""
    found: list[str] = []
    for path in sorted(directory.iterdir()):
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py":
            found.append(f"{dotted}.{path.stem}")
        elif (path / "__init__.py").is_file():
            found += [f"{dotted}.{path.name}", *modules(path, f"{dotted}.{path.name}")]
    return found


def _directive(identifier: str, members: bool = True) -> list[str]:
    """A mkdocstrings block; `members=False` renders only the docstring, under the page's own title."""
    lines = [f"::: {identifier}"]
    if not members:
        lines += [
            "    options:",
            "      members: false",
            "      show_root_heading: false",
            "      show_root_toc_entry: false",
        ]
    return lines + [""]


def _public_api() -> list[str]:
    """A table of `f5lite.__all__`, each name linked to where it is defined."""
    import f5lite

    lines = [
        "## The public API",
        "",
        "`import f5lite` gives these names:",
        "",
        "| name | defined in |",
        "| --- | --- |",
    ]
    for name in f5lite.__all__:
        obj = getattr(f5lite, name)
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and module.startswith(PACKAGE):
            lines.append(f"| [`f5lite.{name}`][{module}.{qualname}] | `{module}` |")
        else:
            lines.append(f"| `f5lite.{name}` | `f5lite` |")
    return lines + [""]


def render_package(name: str) -> str:
    """The Markdown of the page of package `name` (`f5lite` itself: the top-level modules and the public API)."""
    if name == PACKAGE:
        top = sorted(p.stem for p in (ROOT / PACKAGE).glob("*.py") if not p.stem.startswith("_"))
        lines = [f"# `{PACKAGE}`", "", *_directive(PACKAGE, members=False), *_public_api(), "## Top-level modules", ""]
        for module in top:
            lines += _directive(f"{PACKAGE}.{module}")
        return "\n".join(lines)
    dotted = f"{PACKAGE}.{name}"
    lines = [f"# `{dotted}`", "", *_directive(dotted, members=False)]
    for module in modules(ROOT / PACKAGE / name, dotted):
        lines += _directive(module)
    return "\n".join(lines)


def on_config(config: Any) -> Any:
    """List the generated pages in the navigation, after the API reference's index page."""
    pages = [{f"{PACKAGE}.{name}" if name != PACKAGE else PACKAGE: f"{PAGE_DIR}/{name}.md"} for name in _page_names()]

    def fill(items: Any) -> bool:
        if isinstance(items, list):
            if NAV_INDEX in items:
                items[items.index(NAV_INDEX) + 1 : items.index(NAV_INDEX) + 1] = pages
                return True
            return any(fill(item) for item in items)
        if isinstance(items, dict):
            return any(fill(value) for value in items.values())
        return False

    if config.nav is not None and not fill(config.nav):
        raise ValueError(f"mkdocs.yml nav does not list {NAV_INDEX}, after which the API pages go")
    return config


def _page_names() -> list[str]:
    return [PACKAGE, *packages()]


def on_files(files: Any, config: Any) -> Any:
    """Add one generated page per package to the site's files."""
    from mkdocs.structure.files import File

    for name in _page_names():
        files.append(File.generated(config, f"{PAGE_DIR}/{name}.md", content=render_package(name)))
    return files

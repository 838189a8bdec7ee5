"""Where f5lite's shipped files are: the Hydra configs and recipes, and the demo dataset.

Configs and recipes: a source tree (a clone, an editable install, `python -m` from the checkout) reads `configs/`
and `recipes/` at the repository root, so edits there take effect at once. A wheel install has no repository root;
the build copies both folders into the package as `f5lite/_conf/configs` and `f5lite/_conf/recipes` (see
pyproject.toml).

The demo dataset is a ready training directory in `f5lite/demo_data/` (package data, so a wheel install has it
too), usable offline on a fresh clone: about 200 short English utterances in several synthetic voices, made by
`scripts/make_demo_data.py` with espeak-ng from sentences written for this project (see `ORIGIN.md` there). Configs
point at it with the OmegaConf resolver `${f5lite.demo_dir:}`, which resolves to its absolute path whatever the
working directory; the `debug_tiny` recipe uses it.

This module imports no other f5lite package, so that any of them (`f5lite.config` first) may use it.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent

DEMO_RESOLVER = "f5lite.demo_dir"
"""Name of the OmegaConf resolver that gives the demo dataset's directory: `data.dir: ${f5lite.demo_dir:}`."""

_DEMO_DIR = _PACKAGE_DIR / "demo_data"


def config_roots(package_dir: Path = _PACKAGE_DIR) -> tuple[Path, Path]:
    """Find the configs and recipes folders for the f5lite package at `package_dir`.

    A checkout is recognised by the repository's own `pyproject.toml` next to the package, not by a bare `configs/`
    folder: in site-packages a `configs/` sibling can belong to another project.

    Args:
        package_dir: Directory of the `f5lite` package (the default is this installed package).

    Returns:
        `(configs_dir, recipes_dir)`.

    Raises:
        FileNotFoundError: Neither a checkout layout nor the shipped copies exist (a broken install).
    """
    root = package_dir.parent
    if (root / "pyproject.toml").is_file() and (root / "configs").is_dir() and (root / "recipes").is_dir():
        return root / "configs", root / "recipes"
    shipped = package_dir / "_conf"
    if (shipped / "configs").is_dir() and (shipped / "recipes").is_dir():
        return shipped / "configs", shipped / "recipes"
    raise FileNotFoundError(
        f"f5lite's configs were not found next to {package_dir} (no checkout configs/ and recipes/, no shipped "
        "_conf/): reinstall f5lite"
    )


def demo_dir() -> Path:
    """The demo dataset's directory (absolute).

    Only the folder's presence is checked here: what a training directory must hold is `f5lite.data`'s business,
    and this module stays below every f5lite package.

    Returns:
        The directory holding `cuts.jsonl.gz`, `vocab.txt`, `report.json` and the audio.

    Raises:
        FileNotFoundError: The package was installed without its demo data.
    """
    if not _DEMO_DIR.is_dir():
        raise FileNotFoundError(f"f5lite's demo dataset is missing from {_DEMO_DIR}: reinstall f5lite")
    return _DEMO_DIR

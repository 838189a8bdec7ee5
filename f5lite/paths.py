"""Where the Hydra configs and the recipes are: the checkout's copies, or the ones shipped inside the wheel.

A source tree (a clone, an editable install, `python -m` from the checkout) reads `configs/` and `recipes/` at the
repository root, so edits there take effect at once. A wheel install has no repository root; the build copies both
folders into the package as `f5lite/_conf/configs` and `f5lite/_conf/recipes` (see pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


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

"""The one way the tests import a file that is no package module: a script of `scripts/` or a MkDocs hook."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def load_script(name: str, path: Path | None = None) -> ModuleType:
    """Import `scripts/<name>.py` (or the file at `path`) as the module `name`.

    The module is registered in `sys.modules` before it runs, because dataclasses look their module up there.
    """
    spec = importlib.util.spec_from_file_location(name, path or SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

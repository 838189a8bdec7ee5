"""What may import what inside f5lite, checked on the import statements (read with `ast`, functions included).

Every package and top-level module of f5lite has a place in `LAYERS`, from the bottom up; a module imports only
from its own package and from the layers below its own. There is no exception list: an upward import, or a package
that has no place yet, fails the test.

1. Foundation modules: atomic writes, the names of the credentials' environment variables, paths, versioned files,
   the version. They import nothing of f5lite.
2. Front ends and the sampler, functions on tensors: `text`, `audio`, `sampling`.
3. The velocity networks (`models`) and the speech metrics (`metrics`).
4. `config`: the training run's schema and the composition machinery. It is below everything that is configured;
   each tool's own schema lives with the tool (`infer/config.py`, `eval/config.py`).
5. What training reads (`data`) and, beside it, `storage`: run directories, checkpoints, exports, what is at a path
   and the locks on folders; inference, training and the dataset writers build on it.
6. The writers of datasets: `prepare` (`f5lite-prepare`) and, beside it, `transcribe` (raw recordings to a dataset).
7. `infer`: `Synthesizer` and `f5lite-infer`; never the trainer.
8. `eval`: `f5lite-eval`, which synthesizes through `infer` and scores with `metrics`.
9. `train`: the trainer, which calls everything below (validation, prompts, export).
10. The apps, side by side: `serve` (the OpenAI-compatible speech server) and `studio` (the web app, from raw
    recordings through training to speech). Both speak through `infer`; neither imports the other.
11. The public API, `f5lite/__init__.py`, which nothing inside f5lite imports.

Nothing imports `scripts` or `benchmarks` (the benchmarks and tools stand outside the package), and no import forms a
cycle among f5lite's modules, within a layer either.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"atomic", "credentials", "paths", "versioned", "version"}),
    frozenset({"text", "audio", "sampling"}),
    frozenset({"models", "metrics"}),
    frozenset({"config"}),
    frozenset({"data", "storage"}),
    frozenset({"prepare", "transcribe"}),
    frozenset({"infer"}),
    frozenset({"eval"}),
    frozenset({"train"}),
    frozenset({"serve", "studio"}),
    frozenset({"__init__"}),
)
"""Each layer's packages (and top-level modules, by stem), from the bottom up."""

LAYER_OF: dict[str, int] = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def imported_modules(path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file.

    `from a.b import c` names `a.b`; `from f5lite import x` names `f5lite.x`, so that it counts as an import of the
    subpackage `x` when there is one (and of the package's `__init__` otherwise).
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "f5lite" and node.level == 0:
            names.update(f"f5lite.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom):
            names.add(".relative")  # every import in f5lite names the package, so that this test can read it
    return names


def unit_of(package_root: Path, path: Path) -> str:
    """The layered unit a file belongs to: its top-level package, or a top-level module's stem."""
    parts = path.relative_to(package_root).parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def imported_units(package_root: Path, module: str) -> str | None:
    """The f5lite unit an imported module belongs to (`__init__` for the package itself), or None if not f5lite's."""
    head, _, rest = module.partition(".")
    if head != "f5lite":
        return None
    if not rest:
        return "__init__"
    first = rest.split(".")[0]
    if (package_root / first).is_dir() or (package_root / f"{first}.py").is_file():
        return first
    return "__init__"  # a name the package's __init__ defines, e.g. `from f5lite import __version__`


def violations(package_root: Path) -> list[str]:
    """Imports in the package rooted at `package_root` (a directory named `f5lite`) that break the layers."""
    found = []
    for path in sorted(package_root.rglob("*.py")):
        unit, where = unit_of(package_root, path), path.relative_to(package_root.parent)
        if unit not in LAYER_OF:
            found.append(f"{where}: f5lite.{unit} has no layer (give it one in tests/project/test_layering.py)")
            continue
        for module in sorted(imported_modules(path)):
            if module == ".relative":
                found.append(f"{where} has a relative import: name the package (f5lite.…)")
                continue
            if module.split(".")[0] in ("scripts", "benchmarks"):
                found.append(f"{where} imports {module}: nothing in f5lite imports scripts or benchmarks")
                continue
            target = imported_units(package_root, module)
            if target is None or target == unit:
                continue
            if target not in LAYER_OF:
                found.append(f"{where} imports f5lite.{target}, which has no layer")
            elif LAYER_OF[target] >= LAYER_OF[unit]:
                found.append(
                    f"{where} imports f5lite.{target}: {unit} (layer {LAYER_OF[unit] + 1}) imports only from "
                    f"layers below it, and {target} is in layer {LAYER_OF[target] + 1}"
                )
    return sorted(set(found))


def test_f5lite_keeps_its_layers() -> None:
    assert violations(ROOT / "f5lite") == []


def test_every_package_has_a_layer() -> None:
    """Including the ones still to come, so that a new tool cannot arrive without a place."""
    units = {unit_of(ROOT / "f5lite", p) for p in (ROOT / "f5lite").rglob("*.py")}
    assert units <= set(LAYER_OF), units - set(LAYER_OF)
    assert {"transcribe", "serve", "studio"} <= set(LAYER_OF)
    assert LAYER_OF["transcribe"] == LAYER_OF["prepare"]
    # Side by side: the studio speaks through `infer` as the server does, and neither imports the other.
    assert LAYER_OF["serve"] > LAYER_OF["train"] and LAYER_OF["studio"] == LAYER_OF["serve"]


def test_every_subpackage_is_on_the_package_map_and_has_a_layer() -> None:
    """`f5lite/__init__.py`'s docstring is the map a reader starts from: a new subpackage appears there too."""
    doc = ast.get_docstring(ast.parse((ROOT / "f5lite" / "__init__.py").read_text(encoding="utf-8"))) or ""
    subpackages = sorted(p.parent.name for p in (ROOT / "f5lite").glob("*/__init__.py"))
    assert {"transcribe", "serve", "studio", "data", "train"} <= set(subpackages)
    assert [name for name in subpackages if f"`f5lite.{name}`" not in doc] == []
    assert [name for name in subpackages if name not in LAYER_OF] == []


def test_tests_and_the_package_do_not_import_scripts() -> None:
    for folder in (ROOT / "f5lite", ROOT / "tests"):
        for path in folder.rglob("*.py"):
            assert not any(m == "scripts" or m.startswith("scripts.") for m in imported_modules(path)), path


def test_benchmark_scripts_share_the_benchmarks_package_not_each_other() -> None:
    """A benchmark script imports `benchmarks`, never another script (a GRPO benchmark once took bench_speaks.py's
    private `_run` through `sys.path`, and CI failed when that moved)."""
    scripts = {path.stem for path in (ROOT / "scripts").glob("*.py")}
    benchmarks = [path for path in (ROOT / "scripts").glob("*.py") if "benchmarks" in units(imported_modules(path))]
    assert {path.stem for path in benchmarks} >= {name for name in scripts if name.startswith(("bench_", "compare_"))}
    assert len(benchmarks) >= 9
    for path in benchmarks:
        assert not units(imported_modules(path)) & scripts, path


def units(modules: set[str]) -> set[str]:
    """The top-level names of imported modules."""
    return {module.split(".")[0] for module in modules}


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    """The checker on a copy of the package with planted imports across the layers."""
    copy = tmp_path / "f5lite"
    shutil.copytree(ROOT / "f5lite", copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    assert violations(copy) == []
    plants = {
        "infer/cheat.py": ("def f():\n    from f5lite.train.trainer import Trainer\n", "infer (layer 7)"),
        "sampling/cheat.py": ("import f5lite.models\n", "sampling (layer 2)"),
        "models/cheat.py": ("from f5lite import data\n", "models (layer 3)"),
        "config/cheat.py": ("from f5lite.infer.config import InferConfig\n", "config (layer 4)"),
        "data/cheat.py": ("from f5lite.storage import model_sources\n", "data (layer 5)"),
        "storage/cheat.py": ("from f5lite import __version__\n", "storage (layer 5)"),
        "text/cheat.py": ("from f5lite.audio import mel\n", "text (layer 2)"),
        "atomic2.py": ("import os\n", "f5lite.atomic2 has no layer"),
        "metrics/cheat.py": ("from .items import EvalItem\n", "relative import"),
        "eval/cheat.py": ("from benchmarks.runner import run_child\n", "imports scripts or benchmarks"),
    }
    for name, (source, _) in plants.items():
        (copy / name).write_text(source)
    found = violations(copy)
    assert len(found) == len(plants), found
    for name, (_, says) in plants.items():
        assert any(v.startswith(f"f5lite/{name}") and says in v for v in found), (name, found)


def test_imports_down_and_within_pass(tmp_path: Path) -> None:
    """A downward import, a top-level foundation module and the package's own modules are all allowed."""
    copy = tmp_path / "f5lite"
    shutil.copytree(ROOT / "f5lite", copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    (copy / "train" / "fine.py").write_text("from f5lite.infer import Synthesizer\nfrom f5lite.atomic import x\n")
    (copy / "audio" / "fine.py").write_text("from f5lite.audio.mel import log_mel\nimport f5lite.version\n")
    assert violations(copy) == []


def import_cycle(package_root: Path) -> list[str]:
    """A cycle of imports among the package's modules (any import, functions included), or [] when there is none.

    An import of `f5lite.a.b` counts as one of the module `a/b.py` (or `a/b/__init__.py`); a name imported from a
    module counts as the module. A package's `__init__` that re-exports its own modules is no cycle of theirs.
    """
    files = {".".join(p.relative_to(package_root.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package_root.rglob("*.py")}  # fmt: skip
    graph = {name: {m for m in imported_modules(path) if m in files and m != name} for name, path in files.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> list[str]:
        state[name] = 1
        for target in sorted(graph[name]):
            if target.startswith(f"{name}.") or name.startswith(f"{target}."):
                continue  # a package and its own modules
            if state.get(target) == 1:  # on the path that led here: the cycle is that path's tail
                here = [*path, name]
                return [*here[here.index(target) :], target]
            if target not in state and (cycle := visit(target, [*path, name])):
                return cycle
        state[name] = 2
        return []

    for name in sorted(files):
        if name not in state and (cycle := visit(name, [])):
            return cycle
    return []


def test_no_import_forms_a_cycle(tmp_path: Path) -> None:
    """No module of f5lite imports, through others, a module that imports it; a planted cycle is found."""
    assert import_cycle(ROOT / "f5lite") == []
    copy = tmp_path / "f5lite"
    shutil.copytree(ROOT / "f5lite", copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    (copy / "train" / "flow.py").write_text((copy / "train" / "flow.py").read_text() + "\nimport f5lite.train.grpo\n")
    with_grpo = (copy / "train" / "grpo.py").read_text() + "\ndef f():\n    from f5lite.train.flow import build_flow\n"
    (copy / "train" / "grpo.py").write_text(with_grpo)
    assert {"f5lite.train.flow", "f5lite.train.grpo"} <= set(import_cycle(copy))

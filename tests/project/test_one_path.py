"""One way to do each thing: each of these has one definition in f5lite, found by reading every module with `ast`.

Text cutting, the short first piece, stream joining, the name rule, a reference's preparation, the plan of a text,
a batch of speech, the sampler's option parsing for tools with flags, the guided velocity and atomic writing: a
second definition of one of them (a copy in a new tool) fails here, naming both places.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONE_DEFINITION = (
    "chunk_text",  # text cut into chunks (f5lite.infer.chunking)
    "split_text",  # ... with a short first piece for streams
    "crossfade",  # pieces joined (f5lite.infer.crossfade)
    "StreamJoin",  # ... as they are made
    "check_name",  # the name rule of voices and studio names (f5lite.infer.names)
    "make_reference",  # a reference clip made ready for the model (f5lite.infer.reference)
    "Synthesizer",  # the one synthesis path: reference, plan, generate, stream
    "with_model_defaults",  # a distilled student's own settings
    "compose_tool_config",  # a tool's `key=value` arguments (the model, the sampler) beside its flags
    "refuse_removed_flags",  # a tool's flags of earlier versions
    "guided_velocity",  # classifier-free guidance
    "atomic_path",  # write, then rename over the target
)


def definitions(package: Path) -> dict[str, list[str]]:
    """Every module-level or class-level function and class of the package, by name: where each is defined."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found[node.name].append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_each_way_has_one_definition() -> None:
    found = definitions(ROOT / "f5lite")
    assert {name: found[name] for name in ONE_DEFINITION if len(found[name]) != 1} == {}


def test_the_studio_imports_nothing_of_the_server() -> None:
    """The studio speaks through `f5lite.infer`, as the server does (the layering test keeps them apart too)."""
    offending = []
    for path in sorted((ROOT / "f5lite" / "studio").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            offending += [f"{path.name}: {name}" for name in names if name.startswith("f5lite.serve")]
    assert offending == []

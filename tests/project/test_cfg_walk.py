"""Where the trainer's config goes: the walk of `cfg` from `Trainer.__init__`, counted on the source with `ast`.

A place is a function that is handed the whole `TrainConfig`. The walk starts at `Trainer.__init__` and follows
every call whose arguments include a name that holds the config (a parameter that received it, a local assigned
from one, `self.cfg`, `<something>.cfg`). Calls are resolved statically: a function or class of the same module or
imported from f5lite, `self.method` in the same class, `module.function` through an imported module, and the
objectives' dispatch, which `ast` cannot see through, by the tables it reads (`train.objective.ENTRIES` for
`prepare(cfg)`, the builders each objective hands to `Prepared` for `self._build(cfg, ...)`, and every objective
class's method for `self.objective.<method>(cfg, ...)`). All five objectives are walked, as a newcomer reading the
code walks them.

Issue 56 counted 74 places in 35 modules with a count of its own, and asked for at most half, each objective's module
entered once. This count, run on the tree the issue read (dd17135: `Trainer` and the separate `DurationRun`), finds
53 places in 16 modules, `distill.py` and `grpo.py` entered 3 times each and the duration modules 7 times. Now the
config goes from the trainer to the chosen objective's `Prepare`, which binds it to its builder; the builder hands on
sections, and nothing keeps the config: not the loop, not an objective, not the evaluation (tested). Each objective's
module is entered once (tested) and the walk is held at what it is (`PLACES`), so that a function that takes the whole
config where a section would do shows up here. Run this file with `-s` to print the walk.
"""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "f5lite"
START = ("f5lite.train.trainer", "Trainer.__init__")
OBJECTIVE_MODULES = ("f5lite.train.flow", "f5lite.train.distill", "f5lite.train.grpo", "f5lite.train.duration.alone",
                     "f5lite.train.duration.grpo")  # fmt: skip
PLACES = 20
"""The places the walk reaches (2026-11-28; 53 on dd17135): a new one means a new function handed the whole config."""

Place = tuple[str, str]
"""A function: its module and its qualified name (`Class.method` or `function`)."""


@dataclass
class Module:
    """One parsed module: its functions by qualified name, its classes and what its names import."""

    name: str
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Local name -> (module, name in it), or (module, None) for an imported module."""


def parse(path: Path) -> Module:
    """Read one module's top-level functions, classes (with their methods) and f5lite imports."""
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    module, tree = Module(name), ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("f5lite"):
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("f5lite"):
                    module.imports[alias.asname or alias.name] = (alias.name, None)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            module.classes[node.name] = node
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    module.functions[f"{node.name}.{item.name}"] = item
    return module


MODULES = {m.name: m for m in map(parse, sorted(PACKAGE.rglob("*.py")))}


def holds_config(node: ast.expr, holders: set[str]) -> bool:
    """Whether an expression is the config: a holder's name, or an attribute named `cfg`."""
    if isinstance(node, ast.Attribute) and (node.attr == "cfg" or ast.unparse(node) in holders):
        return True
    return isinstance(node, ast.Name) and node.id in holders


def holders_of(function: ast.FunctionDef, received: set[str]) -> set[str]:
    """The names in a function that hold the config: the parameters that received it and locals assigned from it."""
    holders = set(received)
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and value.args and getattr(value.func, "attr", "") == "replace":
                value = value.args[0]  # dataclasses.replace(cfg, ...) is still the config
            if holds_config(value, holders) or returns_config(value, holders):
                holders.add(node.targets[0].id)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple)
        ):
            for target, value in zip(node.targets[0].elts, node.value.elts, strict=False):
                if isinstance(target, ast.Name) and holds_config(value, holders):
                    holders.add(target.id)
    return holders


RETURN_CONFIG = {
    qualname.split(".")[-1]
    for module in MODULES.values()
    for qualname, function in module.functions.items()
    if function.returns is not None and ast.unparse(function.returns) == "TrainConfig"
}
"""The functions that return a config (e.g. a distillation's, its teacher's architecture taken)."""


def returns_config(node: ast.expr, holders: set[str]) -> bool:
    """Whether an expression is a call, given the config, of a function that returns a config."""
    if not isinstance(node, ast.Call) or not any(holds_config(arg, holders) for arg in node.args):
        return False
    return getattr(node.func, "id", getattr(node.func, "attr", "")) in RETURN_CONFIG


def definition(module: str, name: str) -> Place | None:
    """Where `name`, as seen from `module`, is defined in f5lite (a class means its `__init__`), following imports."""
    for _ in range(5):  # re-exports through packages' __init__
        found = MODULES.get(module)
        if found is None:
            return None
        if name in found.functions:
            return module, name
        if name in found.classes:
            if f"{name}.__init__" in found.functions:
                return module, f"{name}.__init__"
            return base_init(module, name)  # a dataclass (no place) or a subclass that keeps its base's
        if name not in found.imports or found.imports[name][1] is None:
            return None
        module, name = found.imports[name]  # type: ignore[assignment]
    return None


def objective_dispatch() -> dict[str, list[Place]]:
    """The one call `ast` cannot follow, `prepare(cfg)`, resolved by the table the code reads (`ENTRIES`)."""
    entries = importlib.import_module("f5lite.train.objective").ENTRIES
    return {"prepare": [(path.split(":")[0], path.split(":")[1]) for path in entries.values()]}


def base_init(module: str, cls: str) -> Place | None:
    """`super().__init__` in a class: its first base's `__init__`, wherever that class is defined."""
    bases = MODULES[module].classes[cls].bases
    return definition(module, bases[0].id) if bases and isinstance(bases[0], ast.Name) else None


def callees(place: Place, call: ast.Call, dispatch: dict[str, list[Place]]) -> list[Place]:
    """The places a call may run, as far as the source says (`functools.partial(f, ...)` runs `f`)."""
    module, qualname = place
    func = call.func
    if ast.unparse(func) in ("functools.partial", "partial") and call.args and isinstance(call.args[0], ast.Name):
        found = definition(module, call.args[0].id)
        return [found] if found else []
    if isinstance(func, ast.Name):
        found = definition(module, func.id)
        return [found] if found else dispatch.get(func.id, [])
    if isinstance(func, ast.Attribute):
        text = ast.unparse(func)
        if text in dispatch:
            return dispatch[text]
        if text == "super().__init__" and "." in qualname:
            found = base_init(module, qualname.split(".")[0])
            return [found] if found else []
        if isinstance(func.value, ast.Name) and func.value.id == "self" and "." in qualname:
            own = f"{qualname.split('.')[0]}.{func.attr}"
            return [(module, own)] if own in MODULES[module].functions else []
        if isinstance(func.value, ast.Name) and func.value.id in MODULES[module].imports:
            target, name = MODULES[module].imports[func.value.id]
            found = definition(target if name is None else f"{target}.{name}", func.attr)
            return [found] if found else []
    return []


def received_names(callee: ast.FunctionDef, call: ast.Call, holders: set[str]) -> set[str]:
    """The callee's parameters that the call fills with the config (a partial's arguments shifted by one)."""
    params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
    if params and params[0] == "self":
        params = params[1:]
    args = call.args[1:] if ast.unparse(call.func) in ("functools.partial", "partial") else call.args
    names = {params[i] for i, arg in enumerate(args) if i < len(params) and holds_config(arg, holders)}
    names |= {kw.arg for kw in call.keywords if kw.arg and holds_config(kw.value, holders)}
    return names or {"cfg"}  # handed on through *args or a protocol: the conventional name


@dataclass
class Walk:
    """The places reached, in the order first reached, and every call that carried the config between two places
    (an object's methods that read the config it keeps are places, reached without such a call)."""

    order: list[Place] = field(default_factory=list)
    edges: list[tuple[Place, Place]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    """Calls given the config that lead nowhere in f5lite (the standard library, torch, OmegaConf, or dynamic)."""
    kept: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """The objects that keep the config: (module, class) -> the attributes of `self` that hold it."""


def stored(function: ast.FunctionDef, holders: set[str]) -> set[str]:
    """The attributes of `self` a method sets to the config (`self.cfg = cfg`)."""
    return {
        target.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and holds_config(node.value, holders)
        for target in node.targets
        if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
    }


def methods_reading(module: str, cls: str, attrs: set[str]) -> list[Place]:
    """The methods of a class and of its subclasses that read one of `attrs` on `self`: theirs through the object."""
    found = []
    for name, parsed in MODULES.items():
        for qualname, function in parsed.functions.items():
            owner = qualname.split(".")[0]
            if "." not in qualname or (owner != cls or name != module) and not subclass_of(name, owner, module, cls):
                continue
            if any(
                isinstance(node, ast.Attribute) and node.attr in attrs and ast.unparse(node.value) == "self"
                for node in ast.walk(function)
            ):
                found.append((name, qualname))
    return found


def subclass_of(module: str, cls: str, base_module: str, base: str) -> bool:
    """Whether `module.cls` derives from `base_module.base` (through its first bases, as `base_init` follows them)."""
    for _ in range(5):
        parent = base_init(module, cls)
        if parent is None:
            return False
        module, cls = parent[0], parent[1].split(".")[0]
        if (module, cls) == (base_module, base):
            return True
    return False


def walk() -> Walk:
    """Follow the config from `Trainer.__init__` (depth first, each place expanded once).

    An object that keeps the config (`self.cfg = cfg`) hands it to every method that reads it there, so those
    methods are places too, reached from the one that stored it.
    """
    dispatch, result = objective_dispatch(), Walk()
    kept = result.kept
    stack: list[tuple[Place, set[str]]] = [(START, {"cfg"})]
    while stack:
        place, received = stack.pop()
        if place in result.order:
            continue
        result.order.append(place)
        module, qualname = place
        function = MODULES[module].functions[qualname]
        cls = (module, qualname.split(".")[0]) if "." in qualname else None
        attrs = kept.get(cls, set()) if cls else set()
        holders = holders_of(function, received | {f"self.{a}" for a in attrs})
        if cls and (new := stored(function, holders) - attrs):
            kept[cls] = attrs | new
            for method in methods_reading(module, cls[1], new):
                stack.append((method, set()))  # the object's own methods: no call hands it over
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            arguments = [*node.args, *(kw.value for kw in node.keywords)]
            if not any(holds_config(arg, holders) for arg in arguments):
                continue
            found = callees(place, node, dispatch)
            if not found:
                result.unresolved.append(f"{module}:{qualname}: {ast.unparse(node.func)}")
            for callee in found:
                result.edges.append((place, callee))
                stack.append((callee, received_names(MODULES[callee[0]].functions[callee[1]], node, holders)))
    return result


def test_the_config_reaches_no_more_places_than_it_did() -> None:
    """A function given the whole config where a section would do fails this; print the walk with `-s`."""
    result = walk()
    modules = Counter(module for module, _ in result.order)
    print(f"\n{len(result.order)} places in {len(modules)} modules:")
    for module, qualname in result.order:
        print(f"  {module}:{qualname}")
    assert START in result.order and {m for m, _ in result.order} >= set(OBJECTIVE_MODULES)  # the walk found them
    assert len(result.order) <= PLACES, f"{len(result.order)} places"


def test_each_objective_module_is_entered_from_outside_once() -> None:
    """Issue 56: the config enters an objective's module by one call from outside it, not many."""
    entries = Counter(callee[0] for caller, callee in set(walk().edges) if caller[0] != callee[0])
    assert all(entries[name] >= 1 for name in OBJECTIVE_MODULES), entries
    assert {name: entries[name] for name in OBJECTIVE_MODULES if entries[name] > 1} == {}


def test_every_call_that_hands_the_config_over_is_followed() -> None:
    """No call through an object (`self.<x>(cfg)`: a builder, an objective given the config again) escapes the walk.

    The config goes to an objective once, by its `Prepare`; from there the loop asks the objective, not the config.
    """
    assert [call for call in walk().unresolved if call.split(": ")[1].startswith("self.")] == []


def test_no_object_keeps_the_config() -> None:
    """The loop, the objectives and the evaluation keep the sections they read, so their methods take no config."""
    assert walk().kept == {}

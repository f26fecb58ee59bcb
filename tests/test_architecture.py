"""The package's layers, asserted: no import cycle between modules and no import that runs
against the layer order, function-level imports included (``TYPE_CHECKING`` blocks excepted).

The order, each layer importing only itself and the layers before it (docs/architecture.md):
core, hardware, readers, dialects, perf, rules, engine, report, cli, and the Python API
(``shapelint.api``, a front end over the commands). Lazy imports inside functions stay allowed
for start-up speed, inside that order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import shapelint
from shapelint.rules import RULE_MODULES

PACKAGE = Path(shapelint.__file__).parent
LAYERS = (
    "core",
    "hardware",
    "readers",
    "dialects",
    "perf",
    "rules",
    "engine",
    "report",
    "cli",
    "api",
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _imported(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every shapelint module ``module`` imports, with the line, wherever the import is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                parent = ".".join([*base, *([node.module] if node.module else [])])
            else:
                parent = node.module or ""
            names = [
                f"{parent}.{a.name}" if f"{parent}.{a.name}" in MODULES else parent
                for a in node.names
            ]
        else:
            continue
        for name in names:
            if name in MODULES and name != module:
                yield name, node.lineno


GRAPH = {m: sorted(set(_imported(m, p))) for m, p in MODULES.items()}
# The registry imports its rule modules by name (`shapelint.rules.RULE_MODULES`): edges too.
GRAPH["shapelint.rules"] = sorted(
    {*GRAPH["shapelint.rules"], *((f"shapelint.rules.{name}", 0) for name in RULE_MODULES)}
)

# Violations still being removed (issue 22); each entry must go once fixed, and the tests fail
# when an entry no longer occurs, so the list can only shrink.
KNOWN_UPWARD: set[str] = set()
KNOWN_CYCLES: list[list[str]] = []


def layer(module: str) -> int | None:
    """The index of ``module``'s layer; None for the package's own ``__init__``/``__main__``."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def test_every_module_sits_in_a_layer() -> None:
    loose = [
        m for m in MODULES if layer(m) is None and m not in ("shapelint", "shapelint.__main__")
    ]
    assert loose == []


def test_no_import_runs_against_the_layer_order() -> None:
    upward = {}
    for module, imports in GRAPH.items():
        mine = layer(module)
        for name, line in imports:
            theirs = layer(name)
            if mine is not None and theirs is not None and theirs > mine:
                upward[f"{MODULES[module].relative_to(PACKAGE.parent)} imports {name}"] = line
    assert sorted(set(upward) - KNOWN_UPWARD) == []
    assert sorted(KNOWN_UPWARD - set(upward)) == []  # fixed: remove it from KNOWN_UPWARD


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = [n for n, _ in GRAPH[node]]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def test_no_import_cycles() -> None:
    found = _cycles()
    assert [c for c in found if c not in KNOWN_CYCLES] == []
    assert [c for c in KNOWN_CYCLES if c not in found] == []  # fixed: remove it from KNOWN_CYCLES


def test_the_checks_can_fail() -> None:
    """The graph is read as intended: a known upward-free edge exists and a cycle is found in
    a graph that has one."""
    assert any(n == "shapelint.core.source" for n, _ in GRAPH["shapelint.core.model"])
    saved = dict(GRAPH)
    try:
        GRAPH["shapelint.core.source"] = [
            *GRAPH["shapelint.core.source"],
            ("shapelint.core.model", 1),
        ]
        assert any("shapelint.core.model" in c for c in _cycles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


# Issue 22's size limits: a module a newcomer can read, a function that fits a screen or two.
# "About 600 lines": the bound leaves a module room for its docstring; core/sandbox.py (629)
# is the largest, one cohesive unit (the worker process, its limits and its protocol).
MAX_MODULE_LINES = 650
MAX_FUNCTION_LINES = 150


def _sizes() -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    modules, functions = [], []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        modules.append((name, text.count("\n")))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                functions.append((f"{name}.{node.name}", node.end_lineno - node.lineno + 1))
    return modules, functions


def test_no_module_or_function_past_the_size_limits() -> None:
    modules, functions = _sizes()
    assert [m for m in modules if m[1] > MAX_MODULE_LINES] == []
    assert [f for f in functions if f[1] > MAX_FUNCTION_LINES] == []
    # The measure is read as intended: the largest module and function are found.
    assert max(n for _, n in modules) > 400 and max(n for _, n in functions) > 100

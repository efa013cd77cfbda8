"""The layering of the package: no import cycles between its modules (imports inside functions
included), and no private name of one module used by another."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "python" / "startlab"

PENDING_PRIVATE: set[tuple[str, str, str]] = set()
"""(importer, module, name): private names still used across modules, to be made public."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
CORE = "startlab._core"
"""The compiled core: imported by many modules, it imports none of them."""


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those only for type checkers."""
    for node in ast.iter_child_nodes(tree):
        if type_checking_only(node):
            assert isinstance(node, ast.If)
            for other in node.orelse:
                yield from imports(ast.Module(body=[other], type_ignores=[]))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from imports(node)


def absolute(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Module -> the package's modules it imports; and the private names imported from another
    module or read as an attribute of one (importer, module, name)."""
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    private: list[tuple[str, str, str]] = []
    for importer, path in MODULES.items():
        tree = ast.parse(path.read_text("utf-8"), str(path))
        bound: dict[str, str] = {}  # local name -> module or object of another module
        for node in imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES:
                        edges[importer].add(alias.name)
                        if alias.asname:
                            bound[alias.asname] = alias.name
                continue
            source = absolute(importer, node)
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if target == CORE:
                    continue
                if target in MODULES:
                    edges[importer].add(target)
                elif source in MODULES:
                    edges[importer].add(source)
                    bound[alias.asname or alias.name] = target
                    if _private(alias.name) and source != importer:
                        private.append((importer, source, alias.name))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
            ):
                private.append((importer, bound[node.value.id], node.attr))
    for name in edges:
        edges[name].discard(name)
    return edges, private


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for other in sorted(edges[node]):
            if state.get(other) == 1:
                return [*path[path.index(other) :], other]
            if other not in state:
                found = visit(other)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_the_modules() -> None:
    edges, _ = graph()
    assert "startlab.sweep.model" in edges
    assert "startlab.sweep.model" in edges["startlab.sweep.plan"]
    assert "startlab.figures" in edges["startlab.plots"]


def test_no_import_cycles() -> None:
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_private_names_across_modules() -> None:
    _, private = graph()
    used = [p for p in private if p not in PENDING_PRIVATE]
    assert not used, "private names used across modules: " + ", ".join(
        f"{importer} uses {module}.{name}" for importer, module, name in used
    )


LAYERS = [
    ["startlab.scenario", "startlab.paths"],
    ["startlab.sweep.model"],
    ["startlab.sweep.table"],
    ["startlab.figures", "startlab.plots"],
    ["startlab.result"],
    ["startlab.kernel"],
    ["startlab.compare"],
    ["startlab.sweep.cache", "startlab.sweep.metrics"],
    ["startlab.sweep.plan"],
    ["startlab.sweep.execute", "startlab.sweep.worker"],
    ["startlab.sweep"],
    ["startlab.reproduce.*"],
    ["startlab", "startlab.cli", "startlab.__main__"],
]
"""The layers of the package, from the bottom up: a module imports only from its own layer and
those below."""


def layer(name: str) -> int:
    for rank, members in enumerate(LAYERS):
        for member in members:
            if name == member or (member.endswith(".*") and (name + ".").startswith(member[:-1])):
                return rank
    raise AssertionError(f"{name}: in no layer of LAYERS")


def test_every_import_goes_down_the_layers() -> None:
    edges, _ = graph()
    upward = [
        f"{importer} -> {imported}"
        for importer, targets in edges.items()
        for imported in targets
        if layer(imported) > layer(importer)
    ]
    assert not upward, "imports up the layers: " + ", ".join(sorted(upward))


def test_the_sweep_model_is_at_the_bottom() -> None:
    edges, _ = graph()
    above = {name for name in MODULES if name.startswith(("startlab.sweep", "startlab.reproduce"))}
    assert not (edges["startlab.sweep.model"] & above)


def test_the_checks_catch_a_cycle_and_a_private_import() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from x import y\n"
        "def f():\n    from z import _w\n"
    )
    found = [(n.module, [a.name for a in n.names]) for n in imports(tree)]
    assert found == [("typing", ["TYPE_CHECKING"]), ("z", ["_w"])]

"""Imports run one way.

The packaged layers, bottom to top, are ``normalize`` < ``cassettes`` < ``streamfns`` < ``conformance``.
A module imports only its own layer and those below it, with no cycle between modules (a package's
``__init__`` is a module like any other); the command-line modules are the top floor and may import
any layer. ``examples/`` sits above everything and is not packaged, so nothing packaged imports it,
and it reaches the packages through their public modules only.

Every import counts, wherever it is written: at the top of a module, inside a function (a lazy
import), or under ``if TYPE_CHECKING:``. A lazy import still runs the other way when it runs, and a
type-only import still ties the two modules together for every reader and checker. An import is an
edge to the module it names (``from streamfns.kit import Adapter``: ``streamfns.kit``; ``from
conformance import runner``: ``conformance`` and ``conformance.runner``), not to the parent packages
Python initialises on the way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

ROOT = Path(__file__).resolve().parents[1]

#: The packaged layers, bottom to top.
LAYERS = ("normalize", "cassettes", "streamfns", "conformance")
#: Not packaged: may import any layer, imported by none.
EXAMPLES = "examples"
#: Command-line modules besides every ``cli`` and ``__main__`` module: the top floor.
TOP_FLOOR = frozenset({"streamfns.demo"})


@dataclass(frozen=True, slots=True)
class Edge:
    """``source`` imports ``target`` at ``where`` (``path:line``)."""

    source: str
    target: str
    where: str

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.where})"


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """Every module of ``packages`` under ``root``: dotted name -> (file, is a package ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for file in sorted((root / package).rglob("*.py")):
            parts = list(file.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = (file, is_package)
    return found


def _known(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest prefix of ``name`` that is one of ``known`` (``a.b.attr`` -> ``a.b``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The dotted names an import statement names, relative ones resolved against ``module``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        origin = ".".join([*base, *([node.module] if node.module else [])])
    else:
        origin = node.module or ""
    yield origin
    # ``from package import name`` imports the submodule ``package.name`` when there is one.
    yield from (f"{origin}.{alias.name}" for alias in node.names if alias.name != "*")


def edges(
    sources: dict[str, tuple[Path, bool]], root: Path, known: dict[str, tuple[Path, bool]] | None = None
) -> list[Edge]:
    """Every import, by a module of ``sources``, of a module of ``known`` (default: ``sources``), sorted."""
    known = sources if known is None else known
    result: list[Edge] = []
    for module, (file, is_package) in sources.items():
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        for node in ast.walk(tree):  # every node: lazy imports and TYPE_CHECKING blocks included
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {target: None for name in _imported(module, is_package, node) if (target := _known(name, known))}
            targets.pop(module, None)
            where = f"{file.relative_to(root).as_posix()}:{node.lineno}"
            result.extend(Edge(module, target, where) for target in targets)
    return sorted(result, key=lambda edge: (edge.source, edge.target, edge.where))


def cycles(graph: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted; sorted."""
    successors: dict[str, list[str]] = {}
    for edge in graph:
        successors.setdefault(edge.source, []).append(edge.target)
        successors.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in successors[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(successors):
        if node not in index:
            visit(node)
    return sorted(found)


def is_top_floor(module: str) -> bool:
    """A command-line module: any ``cli`` or ``__main__`` module, and :data:`TOP_FLOOR`."""
    return module.rpartition(".")[2] in ("cli", "__main__") or module in TOP_FLOOR


def _layer(module: str) -> str:
    return module.partition(".")[0]


def upward(graph: list[Edge]) -> list[Edge]:
    """Imports of a higher layer by a module that is not on the top floor."""
    rank = {layer: number for number, layer in enumerate(LAYERS)}
    return [
        edge
        for edge in graph
        if _layer(edge.source) in rank
        and _layer(edge.target) in rank
        and rank[_layer(edge.target)] > rank[_layer(edge.source)]
        and not is_top_floor(edge.source)
    ]


def _describe(component: list[str], graph: list[Edge]) -> str:
    members = set(component)
    inner = [str(edge) for edge in graph if edge.source in members and edge.target in members]
    return f"cycle {component}:\n    " + "\n    ".join(inner)


def _packaged_graph() -> list[Edge]:
    """Every import by a packaged module (of a packaged module, or of an example)."""
    return edges(modules(ROOT, LAYERS), ROOT, modules(ROOT, (*LAYERS, EXAMPLES)))


def test_no_import_cycle_among_the_packaged_modules() -> None:
    graph = [edge for edge in _packaged_graph() if _layer(edge.target) in LAYERS]
    found = cycles(graph)
    assert found == [], "\n".join(_describe(component, graph) for component in found)


def test_no_packaged_module_imports_a_layer_above_its_own() -> None:
    wrong = upward(_packaged_graph())
    assert wrong == [], "imports up the layers " + " < ".join(LAYERS) + ":\n" + "\n".join(map(str, wrong))


def test_nothing_packaged_imports_the_examples() -> None:
    wrong = [edge for edge in _packaged_graph() if _layer(edge.target) == EXAMPLES]
    assert wrong == [], "examples/ is not in the wheel:\n" + "\n".join(map(str, wrong))


def test_the_examples_use_only_public_modules_of_the_packages() -> None:
    graph = edges(modules(ROOT, (*LAYERS, EXAMPLES)), ROOT)
    private = [
        edge
        for edge in graph
        if _layer(edge.source) == EXAMPLES
        and _layer(edge.target) in LAYERS
        and any(part.startswith("_") and part != "__init__" for part in edge.target.split("."))
    ]
    assert private == [], "examples import private modules:\n" + "\n".join(map(str, private))


def test_the_scan_counts_lazy_type_checking_and_relative_imports(tmp_path: Path) -> None:
    """The checker itself: each way of writing an import is an edge, so a cycle hidden behind one is found."""
    package = tmp_path / "low"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from low.a import thing\n", encoding="utf-8")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from low.b import Other\nthing = 1\n",
        encoding="utf-8",
    )
    (package / "b.py").write_text("def f():\n    from . import a\n    return a\n", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("from .. import b\nfrom ..sub import c\n", encoding="utf-8")
    (package / "sub" / "c.py").write_text("import low.sub\nimport examples.agent_loop.loop\n", encoding="utf-8")
    (tmp_path / "examples" / "agent_loop").mkdir(parents=True)
    (tmp_path / "examples" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "examples" / "agent_loop" / "__init__.py").write_text("", encoding="utf-8")
    graph = edges(modules(tmp_path, ("low",)), tmp_path, modules(tmp_path, ("low", "examples")))
    assert [(edge.source, edge.target, edge.where) for edge in graph] == [
        ("low", "low.a", "low/__init__.py:1"),
        ("low.a", "low.b", "low/a.py:3"),
        ("low.b", "low", "low/b.py:2"),
        ("low.b", "low.a", "low/b.py:2"),
        ("low.sub", "low", "low/sub/__init__.py:1"),
        ("low.sub", "low.b", "low/sub/__init__.py:1"),
        ("low.sub", "low.sub.c", "low/sub/__init__.py:2"),
        ("low.sub.c", "examples.agent_loop", "low/sub/c.py:2"),
        ("low.sub.c", "low.sub", "low/sub/c.py:1"),
    ]
    assert cycles(graph) == [["low", "low.a", "low.b"], ["low.sub", "low.sub.c"]]


def test_the_scan_finds_an_import_up_the_layers_but_not_from_the_top_floor() -> None:
    graph = [
        Edge("streamfns.anthropic.conformance", "conformance", "x.py:1"),
        Edge("streamfns.cli", "conformance.cli", "y.py:1"),
        Edge("conformance.target", "streamfns.kit", "z.py:1"),
        Edge("cassettes.__main__", "conformance", "w.py:1"),
    ]
    assert upward(graph) == [graph[0]]

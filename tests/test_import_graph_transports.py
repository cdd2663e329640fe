"""The transports' modules import each other without cycles, and each says what it is for.

Module-level imports only (an ``if TYPE_CHECKING:`` block is not run, and an import inside
a function is there for import cost, with a comment saying so). A cycle would make the
import order matter, and a split of a module (issue 29) pointless.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TRANSPORTS = Path(__file__).parent.parent / "trio_mcp" / "_transports"


def _modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text("utf-8")) for path in TRANSPORTS.glob("*.py")}


def _module_level_imports(tree: ast.Module, names: set[str]) -> set[str]:
    """The sibling modules (of ``names``) that ``tree`` imports when it is imported."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is not None:
                    found.add(node.module.partition(".")[0])
                else:  # from . import _x
                    found.update(alias.name for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                if isinstance(node, ast.Try):
                    visit(node.finalbody)
                    for handler in node.handlers:
                        visit(handler.body)

    visit(tree.body)
    return found & names


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            cycle = walk(target, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = walk(start, [])
        if cycle is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_among_the_transports() -> None:
    modules = _modules()
    graph = {name: _module_level_imports(tree, set(modules)) for name, tree in modules.items()}
    assert graph["_http_base"] >= {"_http_sender", "_http_client"}  # (the parser sees imports)
    assert _cycle(graph) is None


@pytest.mark.parametrize("name", sorted(_modules()))
def test_every_transport_module_says_what_it_is_for(name: str) -> None:
    if name == "__init__":
        return
    assert ast.get_docstring(_modules()[name])

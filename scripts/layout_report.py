"""Measure the shape of the trio_mcp package: the figures docs/layout.md quotes.

Usage: ``python scripts/layout_report.py [PACKAGE_DIR]`` (default: ``trio_mcp`` beside this
script's folder). Prints, without importing the package:

* the largest modules (lines);
* the largest classes (lines and methods);
* how many names ``trio_mcp/__init__.py`` lists in ``__all__``;
* the import cycles among the package's modules: strongly connected components of the graph
  of ``import`` statements, module-level and function-level alike (an import inside a
  function still ties the two modules together); once as Python runs them, once counting
  the imports under ``if TYPE_CHECKING:`` too (type checkers follow those), and those
  counted per package (``tests/test_import_graph.py`` keeps the testing kit, the config
  package and the server groups at zero).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _in_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _edges(root: Path, modules: dict[str, Path], *, typing: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            else:
                continue
            if not typing and _in_type_checking(node, parents):
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                # a package's own submodules importing the package are not a cycle of ours
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    """Print the report; exit status 0."""
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "trio_mcp"
    root = root.resolve()
    modules = {_module_name(root, path): path for path in sorted(root.rglob("*.py"))}
    sizes = sorted(
        (
            (len(path.read_text(encoding="utf-8").splitlines()), name)
            for name, path in modules.items()
        ),
        reverse=True,
    )
    print("largest modules (lines):")
    for lines, name in sizes[:8]:
        print(f"  {lines:6d}  {name}")
    classes: list[tuple[int, int, str]] = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = sum(
                    isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in node.body
                )
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                classes.append((length, methods, f"{name}.{node.name}"))
    print("largest classes (lines, methods):")
    for length, methods, name in sorted(classes, reverse=True)[:5]:
        print(f"  {length:6d} {methods:4d}  {name}")
    init = ast.parse((root / "__init__.py").read_text(encoding="utf-8"))
    exported = next(
        (
            len(node.value.elts)
            for node in init.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ),
        0,
    )
    print(f"names in {root.name}.__all__: {exported}")
    for typing, label in ((False, "at run time"), (True, "counting TYPE_CHECKING imports")):
        cycles = _cycles(_edges(root, modules, typing=typing))
        print(f"import cycles {label}: {len(cycles)}")
        for component in cycles:
            print(f"  {len(component)} modules: {', '.join(component)}")
    print("import cycles counting TYPE_CHECKING imports, by package:")
    for package, count in _cycles_by_package(_edges(root, modules, typing=True)).items():
        print(f"  {count:6d}  {package}")
    return 0


def _cycles_by_package(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each package's cycles among its own modules (its subpackages' modules included)."""
    packages = sorted({name.rpartition(".")[0] for name in graph if "." in name} | {"trio_mcp"})
    counts: dict[str, int] = {}
    for package in packages:
        inside = {
            name: {target for target in targets if target.startswith(package + ".")}
            for name, targets in graph.items()
            if name.startswith(package + ".")
        }
        counts[package] = len(_cycles(inside))
    return counts


if __name__ == "__main__":
    sys.exit(main(sys.argv))

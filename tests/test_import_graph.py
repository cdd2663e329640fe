"""No import cycle in trio_mcp at run time; the testing kit, config and group point one way.

Their modules' imports (``ast``, so nothing runs) form a graph with no cycle at run time,
nor counting the imports under ``if TYPE_CHECKING:`` (type checkers follow those), and no
module hides an import of a sibling inside a function; an import kept inside a function
for another reason (import cost, a platform) says why in a comment.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "trio_mcp"
PACKAGES = ("testing", "_config", "_group")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(
    tree: ast.Module, package: str
) -> list[tuple[ast.Import | ast.ImportFrom, str, list[str]]]:
    """Each import of ``tree``: its node, where it sits, and the module names it may load.

    Where: ``"module"`` (run at import), ``"function"`` (run on a call) or
    ``"typing"`` (under ``if TYPE_CHECKING:``, never run).
    """
    found: list[tuple[ast.Import | ast.ImportFrom, str, list[str]]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            here = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                here = "function" if where == "module" else where
            elif isinstance(child, ast.If) and _is_type_checking(child):
                here = "typing"
            if isinstance(child, ast.Import):
                found.append((child, here, [alias.name for alias in child.names]))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    name = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    name = child.module or ""
                found.append((child, here, [name, *(f"{name}.{a.name}" for a in child.names)]))
            visit(child, here)

    visit(tree, "module")
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[int, str, str]]], dict[str, Path]]:
    runtime, _typing, in_functions, files = _graphs()
    return runtime, in_functions, files


def _graphs() -> tuple[
    dict[str, set[str]], dict[str, set[str]], dict[str, list[tuple[int, str, str]]], dict[str, Path]
]:
    """The packages' import graphs: at run time, and counting ``TYPE_CHECKING`` imports."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    ours = {m for m in files if any(m.startswith(f"trio_mcp.{p}") for p in PACKAGES)}
    runtime: dict[str, set[str]] = {m: set() for m in ours}
    typing: dict[str, set[str]] = {m: set() for m in ours}
    in_functions: dict[str, list[tuple[int, str, str]]] = {m: [] for m in ours}
    for module in ours:
        path = files[module]
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node, where, names in _imports(ast.parse(path.read_text()), package):
            targets = {n for n in names if n in ours and n != module}
            typing[module] |= targets
            if where != "typing":
                runtime[module] |= targets
            if where == "function":
                in_functions[module].append((node.lineno, ast.unparse(node), ",".join(targets)))
    return runtime, typing, in_functions, files


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return components


def test_the_modules_are_found() -> None:
    runtime, _, _ = _graph()
    assert "trio_mcp.testing._server" in runtime
    assert "trio_mcp._config._loading" in runtime


def test_no_import_cycle_at_run_time() -> None:
    runtime, _, _ = _graph()
    assert _cycles(runtime) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_even_for_type_checkers(package: str) -> None:
    # what a type checker follows: an annotation-only import back up the layers is a cycle
    _, typing, _, _ = _graphs()
    inside = {
        module: {target for target in targets if target.startswith(f"trio_mcp.{package}")}
        for module, targets in typing.items()
        if module.startswith(f"trio_mcp.{package}")
    }
    assert _cycles(inside) == []


def test_a_type_checking_import_counts_for_type_checkers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trio_mcp" / "testing"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "_a.py").write_text("from . import _b\n")
    (package / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._a import x\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", package.parent)
    runtime, typing, _, _ = _graphs()
    assert _cycles(runtime) == []
    assert _cycles(typing) == [["trio_mcp.testing._a", "trio_mcp.testing._b"]]


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_sibling_is_imported_inside_a_function() -> None:
    _, in_functions, _ = _graph()
    hidden = {m: [i for i in found if i[2]] for m, found in in_functions.items()}
    assert {m: found for m, found in hidden.items() if found} == {}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_import_inside_a_function_says_why(package: str) -> None:
    _, in_functions, files = _graph()
    silent: list[str] = []
    for module, found in in_functions.items():
        if not module.startswith(f"trio_mcp.{package}"):
            continue
        lines = files[module].read_text().splitlines()
        for lineno, text, _ in found:
            line, above = lines[lineno - 1], lines[lineno - 2].strip()
            if "#" not in line and not above.startswith("#"):
                silent.append(f"{module}:{lineno}: {text}")
    assert silent == []


def _whole_package_graph(*, typing: bool = False) -> dict[str, set[str]]:
    """Every module of ``trio_mcp`` and the modules of ours it imports when it runs.

    Module-level and function-level imports count (a function's import still ties the two
    modules together); those under ``if TYPE_CHECKING:`` only with ``typing=True`` (type
    checkers follow them, so a cycle there is one for them). An import of a name is an
    edge to the innermost module that holds it; a module importing its own package (the
    ``from . import types`` of a submodule loads ``trio_mcp`` first) is not a cycle of ours.
    """
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _, where, names in _imports(ast.parse(path.read_text()), package):
            if where == "typing" and not typing:
                continue
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module and not module.startswith(name + "."):
                    graph[module].add(name)
    return graph


def test_the_whole_package_has_no_import_cycle_at_run_time() -> None:
    graph = _whole_package_graph()
    assert {"trio_mcp._blocking", "trio_mcp._exceptions", "trio_mcp.cli._app"} <= set(graph)
    assert "trio_mcp.types" in graph["trio_mcp._jsonrpc"]
    assert _cycles(graph) == []


def test_the_types_package_points_one_way_type_checking_imports_included() -> None:
    """trio_mcp.types' private modules import only those below them (base, content, features).

    Type checkers follow ``if TYPE_CHECKING:`` imports too, so those count here; and no
    module of the package imports the package itself (it would see it half-initialised).
    """
    files = {_module_name(p): p for p in (ROOT / "types").glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _, _, names in _imports(ast.parse(path.read_text()), package):
            graph[module] |= {n for n in names if n in files and n != module}
    assert len(files) > 10
    assert _cycles(graph) == []
    assert graph["trio_mcp.types._base"] == set()
    assert [m for m, targets in graph.items() if "trio_mcp.types" in targets] == []


def test_a_function_level_import_counts_and_a_type_checking_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trio_mcp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_a.py").write_text("from . import _b\n")
    (package / "_b.py").write_text("def f():\n    from ._a import x\n")
    (package / "_c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import _a\nif TYPE_CHECKING:\n    from . import _d\n"
    )
    (package / "_d.py").write_text("from ._c import y\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", package)
    assert _cycles(_whole_package_graph()) == [["trio_mcp._a", "trio_mcp._b"]]


# -- no cycle counting TYPE_CHECKING imports (the OAuth client, the CLI, the errors) -------


def _graph_counting_type_checking() -> dict[str, set[str]]:
    """Every module of ``trio_mcp`` and the modules of ours it imports, for a type checker.

    Like :func:`_whole_package_graph`, but the imports under ``if TYPE_CHECKING:`` count
    too: a type checker follows them, and a newcomer reading one module must read the other.
    """
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _, _, names in _imports(ast.parse(path.read_text()), package):
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module and not module.startswith(name + "."):
                    graph[module].add(name)
    return graph


def _cycles_through(modules: set[str]) -> list[list[str]]:
    """The cycles (counting TYPE_CHECKING imports) that hold one of ``modules``."""
    return [c for c in _cycles(_graph_counting_type_checking()) if modules & set(c)]


def _package_modules(package: str) -> set[str]:
    found = {m for m in map(_module_name, ROOT.rglob("*.py")) if m.startswith(f"{package}.")}
    assert found, package
    return found


def test_the_oauth_client_has_no_import_cycle_counting_type_checking_imports() -> None:
    # the provider builds its parts; the parts read its settings through a protocol
    assert _cycles_through(_package_modules("trio_mcp._auth")) == []


def test_the_cli_has_no_import_cycle_counting_type_checking_imports() -> None:
    # _app starts the Repl; _repl knows the run only as its Host protocol
    assert _cycles_through(_package_modules("trio_mcp.cli")) == []


def test_exceptions_and_resilience_have_no_import_cycle_counting_type_checking_imports() -> None:
    # CircuitState lives beside CircuitOpenError: _resilience imports _exceptions, not back
    assert _cycles_through({"trio_mcp._exceptions", "trio_mcp._resilience"}) == []


def test_a_type_checking_import_counts_for_the_type_checker_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trio_mcp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_a.py").write_text("from . import _b\n")
    (package / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._a import x\n"
    )
    (package / "_c.py").write_text("from . import _a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", package)
    assert _cycles(_whole_package_graph()) == []
    assert _cycles_through({"trio_mcp._a"}) == [["trio_mcp._a", "trio_mcp._b"]]
    assert _cycles_through({"trio_mcp._c"}) == []


#: The session and the engine under it: ClientSession and its API mixins, the parts they
#: delegate to, and the bridges generated from them.
ENGINE = (
    "_asyncio",
    "_asyncio_api*",
    "_blocking",
    "_blocking_api*",
    "_catalogue",
    "_eras",
    "_handlers",
    "_jsonrpc",
    "_negotiation",
    "_options",
    "_requests",
    "_result_cache",
    "_rpc",
    "_serving",
    "_session",
    "_session_*",
    "_subscriptions",
    "_taskpushes",
    "_tasks",
    "_tools",
    "_toolsearch",
)


def test_the_engine_has_no_import_cycle_counting_type_checking_imports() -> None:
    """Dependencies in the engine point one way for type checkers too.

    A lower module that needs the session's type gets a Protocol of what it uses (e.g.
    ``_catalogue.Lister``) or a narrower object, never ``if TYPE_CHECKING: from ._session
    import ClientSession``: no engine module is part of a cycle of the graph that counts
    the imports under ``if TYPE_CHECKING:``.
    """
    engine = {f"trio_mcp.{path.stem}" for pattern in ENGINE for path in ROOT.glob(f"{pattern}.py")}
    assert len(engine) >= 25
    assert {"trio_mcp._session_tools", "trio_mcp._blocking_api_tools"} <= engine
    cycles = _cycles(_whole_package_graph(typing=True))
    assert [cycle for cycle in cycles if engine & set(cycle)] == []


def test_a_type_checking_import_counts_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "trio_mcp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._d import Y\n"
    )
    (package / "_d.py").write_text("from ._c import y\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", package)
    assert _cycles(_whole_package_graph()) == []
    assert _cycles(_whole_package_graph(typing=True)) == [["trio_mcp._c", "trio_mcp._d"]]

"""The public surface of trio_mcp: what it exports, and that every public name is documented."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import trio_mcp
import trio_mcp._exceptions

# The feature namespaces: each re-exports one area's names from the private modules.
NAMESPACES = [f"trio_mcp.{name}" for name in trio_mcp._NAMESPACES if name != "types"]

PUBLIC_MODULES = ["trio_mcp", "trio_mcp.testing", "trio_mcp.types", *NAMESPACES]

# Submodules whose names do not start with an underscore. Anything else is private.
ALLOWED_PUBLIC_SUBMODULES = {
    "__main__",
    "cli",
    "demo",
    "testing",
    "types",
    *(name.rpartition(".")[2] for name in NAMESPACES),
}

# Names the package must always export (grow this list; shrinking it breaks users).
REQUIRED_NAMES = {
    "open_mcp_session",
    "MCPError",
    "ServerError",
    "ProtocolError",
    "TransportError",
    "ConnectionClosed",
    "HTTPStatusError",
    "ToolError",
    "AuthError",
    "OAuth",
}

# Public-looking helpers of trio_mcp.types that the session engine uses and that stay out of
# its __all__ (renaming them would touch every module that decodes a message).
ENGINE_HELPERS = {"trio_mcp.types": {"Decoder", "decoder_for", "from_builtins", "peek_result_type"}}


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


def _exported(name: str) -> list[tuple[str, Any]]:
    module = _module(name)
    return [(attr, getattr(module, attr)) for attr in module.__all__]


def _is_ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "trio_mcp" or module.startswith("trio_mcp."))


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_all_is_sorted_and_unique(modname: str) -> None:
    names = list(_module(modname).__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_every_name_in_all_exists(modname: str) -> None:
    module = _module(modname)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_no_public_name_outside_all(modname: str) -> None:
    module = _module(modname)
    # Classes and functions defined in trio_mcp and reachable under a public name must be
    # listed; names imported from elsewhere (typing.Any, trio, ...) are not checked.
    leaked = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in module.__all__
        and name not in ENGINE_HELPERS.get(modname, set())
        and not (modname != "trio_mcp" and name in trio_mcp.__all__)
        and not isinstance(value, types.ModuleType)
        and _is_ours(value)
    ]
    assert leaked == []


def test_required_names_are_exported() -> None:
    assert sorted(REQUIRED_NAMES - set(trio_mcp.__all__)) == []


def test_top_level_is_small() -> None:
    # The entry points, options, everyday exceptions and types: 153 names before the
    # feature namespaces.
    assert 60 <= len(trio_mcp.__all__) <= 80


def test_every_exception_is_exported_somewhere() -> None:
    exported = {name for modname in PUBLIC_MODULES for name in _module(modname).__all__}
    assert sorted(set(trio_mcp._exceptions.__all__) - exported) == []


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_exceptions_are_reexported_not_copied(modname: str) -> None:
    for name, obj in _exported(modname):
        if name in trio_mcp._exceptions.__all__:
            assert obj is getattr(trio_mcp._exceptions, name)


def test_exceptions_derive_from_mcperror() -> None:
    for name in trio_mcp._exceptions.__all__:
        assert issubclass(getattr(trio_mcp._exceptions, name), trio_mcp.MCPError)


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_every_public_module_has_a_docstring(modname: str) -> None:
    assert _own_doc(_module(modname)).strip()


@pytest.mark.parametrize("modname", [m for m in PUBLIC_MODULES if m != "trio_mcp"])
def test_names_show_the_namespace_they_live_in(modname: str) -> None:
    # reprs, tracebacks and help() name the public module, never a private one
    wrong = [
        (name, obj.__module__)
        for name, obj in _exported(modname)
        if (inspect.isclass(obj) or inspect.isfunction(obj))
        and _is_ours(obj)
        and obj.__module__ != modname
    ]
    assert wrong == []


def test_top_level_names_show_trio_mcp_or_their_namespace() -> None:
    # A name re-exported from a namespace (trio_mcp.OAuth is trio_mcp.auth.OAuth) shows the
    # namespace; the others show trio_mcp.
    wrong: list[tuple[str, str]] = []
    for name, obj in _exported("trio_mcp"):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _is_ours(obj):
            continue
        home = obj.__module__
        if home == "trio_mcp":
            continue
        if home not in PUBLIC_MODULES or name not in _module(home).__all__:
            wrong.append((name, home))
    assert wrong == []


def test_namespaces_import_no_optional_extra() -> None:
    # `import trio_mcp` (which imports every namespace but trio_mcp.testing) stays light:
    # httpx, trio-websocket and the optional extras load when a name needs them.
    code = (
        "import sys, trio_mcp\n"
        "heavy = {'httpx', 'trio_websocket', 'keyring', 'jwt', 'yaml', 'rich', "
        "'prompt_toolkit', 'jsonschema_rs', 'ada_url', 'opentelemetry', 'asyncio'}\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(trio_mcp.__file__).parent.parent)},
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("modname", NAMESPACES)
def test_dir_lists_every_exported_name(modname: str) -> None:
    assert set(_module(modname).__all__) <= set(dir(_module(modname)))


def test_only_known_submodules_are_public() -> None:
    public = {
        info.name
        for info in pkgutil.iter_modules(trio_mcp.__path__)
        if not info.name.startswith("_") or info.name == "__main__"
    }
    assert sorted(public - ALLOWED_PUBLIC_SUBMODULES) == []


def test_py_typed_is_shipped() -> None:
    assert Path(trio_mcp.__file__).with_name("py.typed").is_file()


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_exported_classes_and_functions_are_ours(modname: str) -> None:
    foreign = [
        name
        for name, obj in _exported(modname)
        if (inspect.isclass(obj) or inspect.isfunction(obj))
        and not _is_ours(obj)
        and obj.__module__ != "builtins"  # type aliases such as trio_mcp.types.Cursor = str
        # msgspec's UnsetType, re-exported with UNSET so a caller tests optional fields
        and not (modname == "trio_mcp.types" and name == "UnsetType")
    ]
    assert foreign == []


def _own_doc(obj: Any) -> str:
    """The object's own docstring (a class's is not inherited from its base)."""
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _public_members(cls: type) -> list[tuple[str, Any]]:
    members: list[tuple[str, Any]] = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            members.append((name, value))
    return members


def _takes_arguments(func: Any) -> bool:
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name in {"self", "cls"}:
        params = params[1:]
    return bool(params)


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_every_public_name_has_a_docstring(modname: str) -> None:
    undocumented: list[str] = []
    for name, obj in _exported(modname):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _is_ours(obj):
            continue
        if not _own_doc(obj):
            undocumented.append(name)
        if inspect.isclass(obj):
            undocumented += [
                f"{name}.{member}"
                for member, value in _public_members(obj)
                if not _own_doc(value.fget if isinstance(value, property) else value)
            ]
    assert undocumented == []


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_functions_with_arguments_document_them(modname: str) -> None:
    """Google style: a public function or method that takes arguments has an ``Args:`` section."""
    missing: list[str] = []
    for name, obj in _exported(modname):
        candidates: list[tuple[str, Any]] = []
        if inspect.isfunction(obj):
            candidates.append((name, obj))
        elif inspect.isclass(obj) and _is_ours(obj):
            candidates += [
                (f"{name}.{member}", value)
                for member, value in _public_members(obj)
                if inspect.isfunction(value)
            ]
        missing += [
            label
            for label, func in candidates
            if _takes_arguments(func) and "Args:" not in _own_doc(func)
        ]
    assert missing == []

"""trio_mcp.types holds every protocol struct; trio_mcp re-exports only the daily ones."""

from __future__ import annotations

import ast
import inspect
import pickle
import pydoc
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import msgspec
import pytest

import trio_mcp
import trio_mcp.types

# The protocol types a caller names every day, re-exported from trio_mcp.
DAILY = {
    "AudioContent",
    "CallToolResult",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "ImageContent",
    "Prompt",
    "Resource",
    "ResourceLink",
    "Root",
    "TextContent",
    "Tool",
    "to_builtins",
}

# msgspec's own UNSET and UnsetType, re-exported by trio_mcp.types only (never top-level names).
FROM_MSGSPEC = {"UNSET", "UnsetType"}
# Added after the move to trio_mcp.types: they never had a top-level spelling (issue 37).
NEVER_TOP_LEVEL = {
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "UIResourceCsp",
    "UIResourceMeta",
    "UIResourcePermissions",
    "UIToolMeta",
}

MOVED = sorted(
    set(trio_mcp.types.__all__)
    - DAILY
    - FROM_MSGSPEC
    - NEVER_TOP_LEVEL
    - {"Cursor", "Error", "RequestId", "ResultType"}
)


def test_top_level_keeps_only_the_daily_types() -> None:
    assert set(trio_mcp.__all__) & set(trio_mcp.types.__all__) == DAILY
    for name in DAILY:
        assert getattr(trio_mcp, name) is getattr(trio_mcp.types, name)


def test_top_level_all_shrank() -> None:
    # 267 names before trio_mcp.types, 153 before the feature namespaces (trio_mcp.auth, ...).
    assert len(trio_mcp.__all__) <= 80
    assert len(trio_mcp.types.__all__) >= 120


@pytest.mark.parametrize(
    "name", [n for n in MOVED if not n.startswith("META_") and n not in NEVER_TOP_LEVEL]
)
def test_old_top_level_spelling_still_works_and_warns(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"trio_mcp\.types\.{name}\b"):
        value = getattr(trio_mcp, name)
    assert value is getattr(trio_mcp.types, name)


def test_old_spelling_in_from_import_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"trio_mcp\.types\.ToolAnnotations"):
        from trio_mcp import ToolAnnotations
    assert ToolAnnotations is trio_mcp.types.ToolAnnotations


def test_moved_names_are_not_in_dir_or_all() -> None:
    for name in MOVED:
        assert name not in trio_mcp.__all__


def test_unknown_name_is_still_an_attribute_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
            trio_mcp.NoSuchThing  # noqa: B018
        # META_* constants were never top-level names.
        with pytest.raises(AttributeError):
            trio_mcp.META_PROGRESS_TOKEN  # noqa: B018


def test_every_struct_shows_as_trio_mcp_types() -> None:
    wrong = [
        name
        for name in trio_mcp.types.__all__
        if inspect.isclass(obj := getattr(trio_mcp.types, name))
        and issubclass(obj, msgspec.Struct)
        and obj.__module__ != "trio_mcp.types"
    ]
    assert wrong == []
    assert trio_mcp.to_builtins.__module__ == "trio_mcp.types"


def test_every_top_level_name_shows_where_it_is_documented() -> None:
    wrong: list[tuple[str, str]] = []
    for name in trio_mcp.__all__:
        obj = getattr(trio_mcp, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if name in DAILY:
            expected = "trio_mcp.types"
        else:
            # trio_mcp itself, or the namespace it is re-exported from (trio_mcp.auth.OAuth)
            namespaces = [
                f"trio_mcp.{ns}"
                for ns in trio_mcp._NAMESPACES
                if name in getattr(trio_mcp, ns).__all__
            ]
            expected = namespaces[0] if namespaces else "trio_mcp"
        if obj.__module__ != expected:
            wrong.append((name, obj.__module__))
    assert wrong == []


# --- trio_mcp.types is a package of private modules, one spec area each (issue 29) ---------

TYPES_DIR = Path(trio_mcp.types.__file__).parent


def _types_modules() -> list[Path]:
    return sorted(TYPES_DIR.glob("*.py"))


def test_types_is_split_into_small_private_modules_each_with_its_job() -> None:
    modules = _types_modules()
    assert len(modules) > 10
    for path in modules:
        assert path.name == "__init__.py" or path.name.startswith("_"), path.name
        text = path.read_text(encoding="utf-8")
        # The bound is about 800 lines for any module; the private ones stay well under.
        assert len(text.splitlines()) < (800 if path.name == "__init__.py" else 600), path.name
        assert ast.get_docstring(ast.parse(text)), f"{path.name} says its job in a docstring"


def _public_structs() -> list[tuple[str, type[msgspec.Struct]]]:
    return [
        (name, obj)
        for name in trio_mcp.types.__all__
        if inspect.isclass(obj := getattr(trio_mcp.types, name)) and issubclass(obj, msgspec.Struct)
    ]


@pytest.mark.parametrize(
    "cls", [c for _, c in _public_structs()], ids=[n for n, _ in _public_structs()]
)
def test_every_struct_annotation_resolves_where_msgspec_looks(cls: type[msgspec.Struct]) -> None:
    # Field annotations are strings (from __future__ import annotations); msgspec evaluates
    # them, lazily, in the namespace of sys.modules[cls.__module__] for every class of the
    # MRO, as typing.get_type_hints does: that is trio_mcp.types, not the defining module.
    hints = typing.get_type_hints(cls)
    assert {info.name for info in msgspec.structs.fields(cls)} <= set(hints)
    assert msgspec.json.Decoder(cls) is not None


def test_every_struct_resolves_in_a_fresh_interpreter() -> None:
    # msgspec caches what it resolved on the type, so the check above could pass on a type
    # already used by another test: here every struct's decoder is built first thing.
    code = (
        "import inspect, msgspec, trio_mcp.types as t\n"
        "for n in t.__all__:\n"
        "    o = getattr(t, n)\n"
        "    if inspect.isclass(o) and issubclass(o, msgspec.Struct):\n"
        "        msgspec.json.Decoder(o); msgspec.json.Decoder(list[o])\n"
        "for n in ('InputRequest', 'ElicitRequestParams', 'InputResponses', 'AnyResourceContents'):\n"
        "    t.decoder_for(getattr(t, n))\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_engine_helpers_and_every_public_class_show_as_trio_mcp_types() -> None:
    for name in ("Decoder", "decoder_for", "from_builtins", "peek_result_type", "to_builtins"):
        assert getattr(trio_mcp.types, name).__module__ == "trio_mcp.types"
    wrong = [
        name
        for name in trio_mcp.types.__all__
        if (inspect.isclass(obj := getattr(trio_mcp.types, name)) or inspect.isfunction(obj))
        and obj.__module__ != "trio_mcp.types"
        and obj.__module__ != "builtins"  # Cursor = str, ResultType = str
        and name not in FROM_MSGSPEC
    ]
    assert wrong == []


def test_reprs_pickles_and_help_name_trio_mcp_types() -> None:
    t = trio_mcp.types
    values: list[object] = [
        t.Tool(name="echo", input_schema={"type": "object"}),
        t.CallToolResult(content=[t.TextContent(text="hi")], is_error=False),
        t.ReadResourceResult(contents=[t.TextResourceContents(uri="file:///a", text="x")]),
        t.InputRequiredResult(input_requests={"a": t.ListRootsRequest()}, request_state="s"),
        t.UnknownContent({"type": "hologram", "frames": 3}),
    ]
    for value in values:
        data = pickle.dumps(value)
        # A pickle names the public home only, so it loads whatever the private layout.
        assert b"trio_mcp.types" in data
        assert b"trio_mcp.types._" not in data
        assert pickle.loads(data) == value
        assert type(pickle.loads(data)) is type(value)
    assert repr(values[0]) == "Tool(name='echo', input_schema={'type': 'object'})"
    page = pydoc.render_doc(t.Tool, renderer=pydoc.plaintext)
    assert "in module trio_mcp.types" in page
    assert "class Tool(_Wire)" in page
    assert "trio_mcp.types._" not in page

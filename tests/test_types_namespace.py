"""trio_mcp.types holds every protocol struct; trio_mcp re-exports only the daily ones."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
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
    "ClientCapabilities",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "LoggingMessageNotificationParams",
    "ProgressNotificationParams",
    "Prompt",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceLink",
    "ResourceTemplate",
    "Root",
    "ServerCapabilities",
    "TextContent",
    "Tool",
    "to_builtins",
}

MOVED = sorted(set(trio_mcp.types.__all__) - DAILY - {"Cursor", "Error", "RequestId", "ResultType"})


def test_top_level_keeps_only_the_daily_types() -> None:
    assert set(trio_mcp.__all__) & set(trio_mcp.types.__all__) == DAILY
    for name in DAILY:
        assert getattr(trio_mcp, name) is getattr(trio_mcp.types, name)


def test_top_level_all_shrank() -> None:
    # 267 names before trio_mcp.types; 129 of the rest are entry points, options, handlers
    # and exceptions.
    assert len(trio_mcp.__all__) <= 160
    assert len(trio_mcp.types.__all__) >= 120


@pytest.mark.parametrize("name", [n for n in MOVED if not n.startswith("META_")])
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
        elif name in trio_mcp._LAZY or (inspect.isclass(obj) and issubclass(obj, msgspec.Struct)):
            # Loaded on first use, or a Struct whose annotations msgspec resolves in its own
            # module (MCPConfig, StoredToken, ...): these keep their private module.
            assert obj.__module__.startswith("trio_mcp._"), name
            continue
        else:
            expected = "trio_mcp"
        if obj.__module__ != expected:
            wrong.append((name, obj.__module__))
    assert wrong == []


_TYPED_SNIPPET = """
import trio_mcp
import trio_mcp.types
from trio_mcp.types import ToolAnnotations


def first(result: trio_mcp.types.ListToolsResult, hints: ToolAnnotations) -> trio_mcp.Tool:
    return result.tools[0]


wrong: trio_mcp.types.Tool = 42  # the one error: the type is known, and it is not int
"""


def test_type_checkers_see_trio_mcp_types(tmp_path: Path) -> None:
    # trio_mcp.types is a real module, so pyright (and mypy) resolve trio_mcp.types.X.
    pyright = Path(sys.executable).with_name("pyright")
    if not pyright.exists():  # pragma: no cover
        pytest.skip("pyright is not installed next to this Python")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(_TYPED_SNIPPET)
    root = str(Path(trio_mcp.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.run(
        [str(pyright), "--outputjson", "--pythonpath", sys.executable, str(snippet)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    report = json.loads(proc.stdout)
    errors = [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"]
    # Exactly the planted error: were trio_mcp.types.Tool unknown to the checker, assigning
    # an int to it would pass unnoticed (and a missing module would be an import error).
    assert len(errors) == 1, errors
    assert "42" in errors[0] and "Tool" in errors[0], errors

"""trio_mcp.types holds every protocol struct; trio_mcp re-exports only the daily ones."""

from __future__ import annotations

import inspect
import warnings

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

MOVED = sorted(set(trio_mcp.types.__all__) - DAILY - {"Cursor", "Error", "RequestId", "ResultType"})


def test_top_level_keeps_only_the_daily_types() -> None:
    assert set(trio_mcp.__all__) & set(trio_mcp.types.__all__) == DAILY
    for name in DAILY:
        assert getattr(trio_mcp, name) is getattr(trio_mcp.types, name)


def test_top_level_all_shrank() -> None:
    # 267 names before trio_mcp.types, 153 before the feature namespaces (trio_mcp.auth, ...).
    assert len(trio_mcp.__all__) <= 80
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

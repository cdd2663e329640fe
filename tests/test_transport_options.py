"""Transport options belong on the parameters objects; ``open_mcp_session`` takes session ones.

The typed signature (both overloads) has no transport option, so a type checker flags
``open_mcp_session(url, headers=...)``; at run time the old keywords still work for one
release, with a :class:`DeprecationWarning` naming the parameters object to use, then the
same check as before (an option that does not fit the target is a :class:`TypeError`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import trio

import trio_mcp
from trio_mcp import _connect
from trio_mcp._connect import _TRANSPORT_OPTIONS  # pyright: ignore[reportPrivateUsage]
from trio_mcp.testing import MockServer, ToolContext


def make_server() -> MockServer:
    server = MockServer(eras="legacy")

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    return server


def test_the_typed_signatures_take_no_transport_option() -> None:
    # the overloads are what type checkers see (read from the source: __module__ is
    # rewritten to "trio_mcp", so typing.get_overloads does not find them)
    tree = ast.parse(Path(_connect.__file__).read_text(encoding="utf-8"))
    overloads = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name == "open_mcp_session"
        and any(ast.unparse(d) == "overload" for d in node.decorator_list)
    ]
    assert len(overloads) == 2
    for overload in overloads:
        names = {arg.arg for arg in [*overload.args.posonlyargs, *overload.args.kwonlyargs]}
        assert names & _TRANSPORT_OPTIONS == set()
        assert {"sampling", "protocol", "default_timeout", "era_cache"} <= names
        assert overload.args.kwarg is None
    assert {"headers", "ssl_context", "client", "env", "cwd", "auth"} <= _TRANSPORT_OPTIONS


async def test_the_parameters_object_carries_them() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        params = trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            result = await session.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]


async def test_a_transport_keyword_still_works_with_a_deprecation_warning() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        with pytest.warns(DeprecationWarning, match="client") as caught:
            opened = trio_mcp.open_mcp_session(  # type: ignore[call-overload]
                nursery,
                http.url,
                client=http.client,
            )
        message = str(caught[0].message)
        assert "client" in message
        assert "trio_mcp.StreamableHTTPParameters(target, client=...)" in message
        assert caught[0].filename == __file__  # points at the caller
        async with opened as session:
            result = await session.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("target", "options", "named"),
    [
        (["python", "-m", "server"], {"env": {"A": "1"}, "cwd": "/"}, "StdioParameters"),
        ("python -m server", {"shutdown_timeout": 1.0}, "StdioParameters"),
        ("wss://example.com/mcp", {"headers": {"X": "1"}}, "WebSocketParameters"),
        ("https://example.com/mcp", {"ssl_context": None}, "StreamableHTTPParameters"),
    ],
)
def test_the_warning_names_the_parameters_object_of_the_target(
    target: object, options: dict[str, object], named: str
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"trio_mcp\.{named}\(target, "):
        trio_mcp.open_mcp_session(target, **options)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("target", "options", "problem"),
    [
        ("https://example.com/mcp", {"env": {}}, "does not apply to an http"),
        (["python", "server.py"], {"headers": {}}, "does not apply to a stdio command"),
        ("ws://127.0.0.1:1/mcp", {"auth": None}, "does not apply to a ws"),
    ],
)
def test_a_misfit_still_fails_after_the_warning(
    target: object, options: dict[str, object], problem: str
) -> None:
    with (
        pytest.warns(DeprecationWarning, match="deprecated"),
        pytest.raises(TypeError, match=problem),
    ):
        trio_mcp.open_mcp_session(target, **options)  # type: ignore[call-overload]


def test_on_a_parameters_object_the_warning_says_set_them_there() -> None:
    params = trio_mcp.StdioParameters(["python", "server.py"])
    with (
        pytest.warns(DeprecationWarning, match="the parameters object given as the target"),
        pytest.raises(TypeError, match="set them on the object"),
    ):
        trio_mcp.open_mcp_session(params, env={})  # type: ignore[call-overload]


def test_an_unknown_keyword_is_a_type_error_without_a_warning() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'sampeling'"):
        trio_mcp.open_mcp_session("python server.py", sampeling=None)  # type: ignore[call-overload]

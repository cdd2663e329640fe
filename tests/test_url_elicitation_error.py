"""``URLElicitationRequiredError.elicitations``: parsed where the wire error is decoded.

The exception module does not know the protocol types (no import of ``types``, at module
level or in a function); the JSON-RPC layer, which maps error codes to exceptions, parses
``data["elicitations"]`` and hands the result to the constructor.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._exceptions import fresh_copy
from trio_mcp._jsonrpc import server_error_from_wire
from trio_mcp.testing import MockServer, ToolContext

GOOD = {"mode": "url", "message": "Sign in", "url": "https://example.com/a", "elicitationId": "e1"}


def test_a_decoded_error_carries_its_valid_elicitations() -> None:
    data = {"elicitations": [GOOD, {"mode": "url"}, 3, "x", {**GOOD, "url": 5}]}
    error = server_error_from_wire(-32042, "go there", data, method="tools/call")
    assert isinstance(error, trio_mcp.URLElicitationRequiredError)
    assert error.data == data
    assert error.elicitations == [
        trio_mcp.types.ElicitRequestURLParams(
            message="Sign in", url="https://example.com/a", elicitation_id="e1"
        )
    ]
    copy = fresh_copy(error)
    assert copy.elicitations == error.elicitations


def test_a_constructed_error_keeps_its_elicitations_and_builds_its_data() -> None:
    needed = trio_mcp.types.ElicitRequestURLParams(message="m", url="https://example.com/b")
    error = trio_mcp.URLElicitationRequiredError(-32042, "go", elicitations=[needed])
    assert error.elicitations == [needed]
    wire = {"mode": "url", "message": "m", "url": "https://example.com/b"}
    assert error.data == {"elicitations": [wire]}
    assert str(error) == "server error -32042: go"
    # decoding what it sends gives the same elicitations back
    again = server_error_from_wire(-32042, "go", error.data)
    assert isinstance(again, trio_mcp.URLElicitationRequiredError)
    assert again.elicitations == [needed]


def test_a_constructed_error_without_elicitations_has_none() -> None:
    error = trio_mcp.URLElicitationRequiredError(-32042, "go", {"other": 1}, method="x")
    assert error.elicitations == []
    assert error.data == {"other": 1}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    st.one_of(
        JSON,
        st.fixed_dictionaries({"elicitations": st.lists(JSON | st.just(GOOD), max_size=5)}),
    )
)
def test_any_data_gives_an_error_with_a_list_of_url_elicitations(data: Any) -> None:
    error = server_error_from_wire(-32042, "m", data)
    assert isinstance(error, trio_mcp.URLElicitationRequiredError)
    assert all(isinstance(e, trio_mcp.types.ElicitRequestURLParams) for e in error.elicitations)
    if isinstance(data, dict) and isinstance(data.get("elicitations"), list):
        assert len(error.elicitations) == data["elicitations"].count(GOOD)


async def test_a_test_server_raising_one_reaches_the_client_with_its_elicitations() -> None:
    server = MockServer(eras="legacy")
    needed = trio_mcp.types.ElicitRequestURLParams(
        message="Sign in", url="https://example.com/a", elicitation_id="e1"
    )

    @server.tool
    async def read_files(ctx: ToolContext) -> str:
        raise trio_mcp.URLElicitationRequiredError(-32042, "sign in first", elicitations=[needed])

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            with pytest.raises(trio_mcp.URLElicitationRequiredError) as info:
                await session.call_tool("read_files", {})
    assert info.value.elicitations == [needed]
    assert info.value.method == "tools/call"

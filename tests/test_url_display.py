"""A password in a server URL (``https://user:pw@host/mcp``) never shows: one display
function (``_redact.display_url``, userinfo dropped) is used by every repr, exception
message and log line that quotes a URL."""

from __future__ import annotations

import logging
import socket

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._exceptions import HTTPStatusError
from trio_mcp._redact import display_url
from trio_mcp.transports import SSEParameters, StreamableHTTPParameters, WebSocketParameters

PASSWORD = "pw-s3cr3t"


@given(
    st.sampled_from(["http", "https", "ws", "wss"]),
    st.text(st.characters(blacklist_characters="/?#@"), min_size=1, max_size=10),
    st.text(st.characters(blacklist_characters="/?#"), max_size=20),
    st.text(max_size=20),
)
def test_the_userinfo_is_dropped(scheme: str, user: str, host: str, rest: str) -> None:
    host = host.replace("@", "") or "h"
    shown = display_url(f"{scheme}://{user}:{PASSWORD}@{host}/{rest}")
    assert shown == f"{scheme}://{host}/{rest}"
    assert display_url(f"{scheme}://{host}/{rest}") == f"{scheme}://{host}/{rest}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://alice:pw@host:8443/mcp?x=1", "https://host:8443/mcp?x=1"),
        ("http://alice@host", "http://host"),
        ("http://host/a@b", "http://host/a@b"),
        ("http://host?to=a@b", "http://host?to=a@b"),
        ("not a url", "not a url"),
    ],
)
def test_display_url(url: str, shown: str) -> None:
    assert display_url(url) == shown


@pytest.mark.parametrize("kind", [StreamableHTTPParameters, SSEParameters])
def test_parameter_reprs(kind: type[StreamableHTTPParameters]) -> None:
    shown = repr(kind(f"https://alice:{PASSWORD}@mcp.example/mcp"))
    assert PASSWORD not in shown and "https://mcp.example/mcp" in shown


def test_websocket_parameter_repr() -> None:
    shown = repr(WebSocketParameters(f"wss://alice:{PASSWORD}@mcp.example/mcp"))
    assert PASSWORD not in shown and "wss://mcp.example/mcp" in shown


def test_http_status_error() -> None:
    error = HTTPStatusError(500, "oops", f"https://alice:{PASSWORD}@mcp.example/mcp")
    assert PASSWORD not in str(error) and "https://mcp.example/mcp" in str(error)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_connection_error_does_not_show_the_password(
    scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{scheme}://alice:{PASSWORD}@127.0.0.1:{_closed_port()}/mcp"
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    with trio.fail_after(30), pytest.raises(trio_mcp.TransportError) as caught:
        async with trio_mcp.open_mcp_session(url, protocol="legacy"):
            pass  # pragma: no cover
    assert PASSWORD not in str(caught.value)
    assert "127.0.0.1:" in str(caught.value)
    assert PASSWORD not in caplog.text


def test_the_oauth_server_key_has_no_userinfo() -> None:
    """The server URL tokens are kept for (and that auth messages and the resource indicator
    quote) never holds the URL's password."""
    from trio_mcp._auth._challenges import canonical

    assert canonical(f"HTTPS://alice:{PASSWORD}@MCP.example/mcp?x=1") == "https://mcp.example/mcp"

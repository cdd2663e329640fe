"""Transports: the parameters of each built-in one, and the contract to write your own.

The parameter classes ([`StdioParameters`][trio_mcp.transports.StdioParameters],
[`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters],
[`SSEParameters`][trio_mcp.transports.SSEParameters],
[`WebSocketParameters`][trio_mcp.transports.WebSocketParameters]) are options a caller names every
day, so ``trio_mcp`` re-exports them too. [`Transport`][trio_mcp.transports.Transport],
[`TransportFactory`][trio_mcp.transports.TransportFactory],
[`MessageInfo`][trio_mcp.transports.MessageInfo] and `RequestFailure` are what a transport of your
own implements (``trio_mcp.testing.check_transport`` checks it).

Importing this module is cheap: the HTTP and WebSocket parameters (httpx, trio-websocket)
load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._public import load_lazily as _load_lazily
from ._public import publish as _publish
from ._statistics import PoolStatistics as PoolStatistics
from ._transports._base import MessageInfo as MessageInfo
from ._transports._base import RequestFailure as RequestFailure
from ._transports._base import Transport as Transport
from ._transports._base import TransportFactory as TransportFactory
from ._transports._stdio import StdioParameters as StdioParameters

if TYPE_CHECKING:
    from ._transports._http import StreamableHTTPParameters as StreamableHTTPParameters
    from ._transports._sse import SSEParameters as SSEParameters
    from ._transports._websocket import WebSocketParameters as WebSocketParameters

# Loaded on first use: they import httpx (or trio-websocket).
_LAZY = {
    "StreamableHTTPParameters": "._transports._http",
    "SSEParameters": "._transports._sse",
    "WebSocketParameters": "._transports._websocket",
}

__all__ = [
    "MessageInfo",
    "PoolStatistics",
    "RequestFailure",
    "SSEParameters",
    "StdioParameters",
    "StreamableHTTPParameters",
    "Transport",
    "TransportFactory",
    "WebSocketParameters",
]


def __getattr__(name: str) -> Any:
    return _load_lazily(__name__, globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


_publish(__name__, globals(), __all__)

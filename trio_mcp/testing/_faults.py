"""Fault injection: what goes wrong between a client and its server, scripted.

[`Faults`][trio_mcp.testing.Faults] holds the rules (``server.faults.drop("tools/call")``...);
[`FaultyStream`][trio_mcp.testing.FaultyStream] applies them to one server stream: the responses it
sends, the requests it receives, its message counts. The client end of a faulty in-memory connection
([`MockClientTransport`][trio_mcp.testing.MockClientTransport]) reports a scripted crash the way the
stdio transport reports a dead process: end of stream, then a
[`ConnectionClosed`][trio_mcp.ConnectionClosed] carrying the exit code and the tail of stderr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec
import trio

from .._exceptions import ConnectionClosed, MCPError
from .._transports._base import MessageInfo
from .._transports._memory import MemoryTransport

__all__ = [
    "DEFAULT_CRASH_STDERR",
    "Faults",
    "FaultyStream",
    "Match",
    "MockClientTransport",
]

Match = str | Callable[[dict[str, Any]], bool] | None
"""Matches the request a fault applies to: a method name, a predicate on the decoded request, or
``None`` for any request."""

DEFAULT_CRASH_STDERR = (
    "Traceback (most recent call last):\n"
    '  File "server.py", line 1, in <module>\n'
    "RuntimeError: injected crash"
)
"""The stderr an injected crash shows by default: what a Python server dying would print."""

_Kind = Literal["delay", "drop", "duplicate", "error", "garbage", "truncate", "crash", "stall"]
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class _StreamLike(Protocol):
    async def send(self, data: bytes) -> None: ...

    async def receive(self) -> bytes: ...

    async def aclose(self) -> None: ...


@dataclass
class _Rule:
    kind: _Kind
    match: Match
    times: int | None
    seconds: float = 0.0
    payload: Any = None

    def matches(self, request: dict[str, Any]) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return request.get("method") == self.match
        try:
            return bool(self.match(request))
        except (KeyError, IndexError, TypeError, AttributeError):
            return False  # a predicate written for another request's shape


class Faults:
    """The faults a [`MockServer`][trio_mcp.testing.MockServer] (or any server stream) injects, set
    up front or live.

    Every response fault applies to the response to a matching request: ``match`` is a method
    name (``"tools/call"``), a predicate on the decoded request (``lambda r:
    r["params"]["name"] == "slow"``; one that raises ``KeyError``, ``IndexError``,
    ``TypeError`` or ``AttributeError`` on a request does not match it) or ``None`` (any
    request). ``times`` is how many matching
    requests it hits (``None``: all of them); the first rule that matches wins. Faults apply
    to every connection of the server, including connections already open.

    For example:

    ```python
    server.faults.delay("tools/call", 30)      # the answer comes 30 s later
    server.faults.drop("resources/read")       # never answered
    server.faults.crash("tools/call", exit_code=2, stderr="Segmentation fault")
    ```
    """

    def __init__(self) -> None:
        """Create an empty set of faults: the connection behaves."""
        self._rules: list[_Rule] = []
        self.close_at_sent: int | None = None
        self.close_at_received: int | None = None
        self._release = trio.Event()
        self._stalled: bool = False
        self.session_expired: bool = False

    def _add(self, rule: _Rule) -> None:
        if rule.times is not None and rule.times < 1:
            raise ValueError(f"times must be at least 1 (or None for always), not {rule.times}")
        self._rules.append(rule)

    def delay(self, match: Match, seconds: float, *, times: int | None = 1) -> None:
        """Send the response to a matching request ``seconds`` later (on trio's clock).

        Other messages overtake it, as they would on a slow server.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            seconds: The extra delay.
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("delay", match, times, seconds=seconds))

    def drop(self, match: Match, *, times: int | None = 1) -> None:
        """Never send the response to a matching request.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("drop", match, times))

    def duplicate(self, match: Match, *, times: int | None = 1) -> None:
        """Send the response to a matching request twice.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("duplicate", match, times))

    def error(
        self,
        match: Match,
        code: int = -32603,
        message: str = "Internal error (injected)",
        data: Any = None,
        *,
        times: int | None = 1,
    ) -> None:
        """Answer a matching request with a JSON-RPC error instead of its result.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            code: The error code.
            message: The error message.
            data: The optional ``data`` member.
            times: How many matching requests (``None``: all).
        """
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._add(_Rule("error", match, times, payload=error))

    def garbage(
        self, match: Match, data: bytes = b"\x00\xffnot JSON at all", *, times: int | None = 1
    ) -> None:
        """Send ``data`` (not a JSON-RPC message) instead of the response to a matching request.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            data: The bytes sent in the response's place.
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("garbage", match, times, payload=bytes(data)))

    def truncate(self, match: Match, *, times: int | None = 1) -> None:
        """Send only the first half of the response to a matching request.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("truncate", match, times))

    def crash(
        self,
        match: Match = None,
        *,
        exit_code: int | None = 1,
        stderr: str = DEFAULT_CRASH_STDERR,
        times: int | None = 1,
    ) -> None:
        """Crash the connection when a matching request arrives, before it is served.

        The client sees end of stream, then [`ConnectionClosed`][trio_mcp.ConnectionClosed] with
        ``exit_code`` and ``stderr_tail``, as a dead stdio server process shows them. For a
        crash right now, call [`MockServer.crash()`][trio_mcp.testing.MockServer.crash].

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            exit_code: The exit code the client is told (``None``: unknown).
            stderr: The server's last stderr output.
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("crash", match, times, payload=(exit_code, stderr)))

    def stall(self, match: Match = None, *, times: int | None = 1) -> None:
        """Stall the server's output from the response to a matching request on.

        Nothing more reaches the client (requests are still read) until
        [`release()`][trio_mcp.testing.Faults.release], like a server blocked on a full pipe or a
        half-open socket. ``stall(None)`` stalls at the next response;
        [`stall_now()`][trio_mcp.testing.Faults.stall_now] stalls at once.

        Args:
            match: Which requests (see [`Faults`][trio_mcp.testing.Faults]).
            times: How many matching requests (``None``: all).
        """
        self._add(_Rule("stall", match, times))

    def stall_now(self) -> None:
        """Stall the server's output at once, until
        [`release()`][trio_mcp.testing.Faults.release]."""
        self._stalled = True

    def release(self) -> None:
        """End a stall: everything held back is sent, in order."""
        self._stalled = False
        self._release.set()
        self._release = trio.Event()

    def close_at(self, n: int, *, counting: Literal["sent", "received"] = "sent") -> None:
        """Close the stream cleanly at the ``n``-th message of each connection.

        With ``counting="sent"`` the server's ``n``-th message is not sent: the stream ends
        in its place. With ``"received"`` the stream ends when the ``n``-th client message
        arrives, before it is served. The client sees end of stream.

        Args:
            n: The 1-based message number.
            counting: Which direction's messages to count.

        Raises:
            ValueError: ``n`` is below 1.
        """
        if n < 1:
            raise ValueError(f"close_at counts from 1, not {n}")
        if counting == "sent":
            self.close_at_sent = n
        else:
            self.close_at_received = n

    def expire_session(self) -> None:
        """HTTP only: expire the legacy session; the next request gets ``404 Not Found``.

        The client must then start a new session with ``initialize``, as the spec says.
        """
        self.session_expired = True

    def clear(self) -> None:
        """Remove every fault and end any stall."""
        self._rules.clear()
        self.close_at_sent = None
        self.close_at_received = None
        self.session_expired = False
        self.release()

    def _take(self, request: dict[str, Any], kinds: frozenset[str]) -> _Rule | None:
        """The first live rule of one of ``kinds`` matching ``request``, used up once."""
        for rule in self._rules:
            if rule.kind in kinds and rule.matches(request):
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return None

    async def _wait_released(self) -> None:
        """Wait while the output is stalled."""
        while self._stalled:
            await self._release.wait()


_RESPONSE_KINDS = frozenset({"delay", "drop", "duplicate", "error", "garbage", "truncate", "stall"})
_REQUEST_KINDS = frozenset({"crash"})


class _Exit:
    """How a connection's server "process" ended, shared by both ends."""

    __slots__ = ("crashed", "exit_code", "stderr")

    def __init__(self) -> None:
        self.crashed: bool = False
        self.exit_code: int | None = None
        self.stderr: str = ""


class FaultyStream:
    """A server stream that applies a [`Faults`][trio_mcp.testing.Faults] to what flows through it.

    Wrap any server stream (memory, WebSocket, your own) and serve it with
    [`MockServer.serve()`][trio_mcp.testing.MockServer.serve]. Delayed responses are sent from tasks
    in ``nursery``.
    """

    def __init__(self, stream: _StreamLike, faults: Faults, nursery: trio.Nursery) -> None:
        """Wrap ``stream``.

        Args:
            stream: The server end to wrap; closed by
                [`aclose()`][trio_mcp.testing.FaultyStream.aclose].
            faults: The rules to apply (read live).
            nursery: Where delayed responses wait.
        """
        self._stream = stream
        self._faults = faults
        self._nursery = nursery
        self._requests: dict[Any, dict[str, Any]] = {}
        self._sent = 0
        self._received = 0
        self._closed = False
        self.exit: _Exit = _Exit()

    def mark_crashed(self, exit_code: int | None, stderr: str) -> None:
        """Record how the server "process" died, for the client's error message.

        Args:
            exit_code: The exit code the client is told.
            stderr: The last stderr output.
        """
        self.exit.crashed = True
        self.exit.exit_code = exit_code
        self.exit.stderr = stderr

    async def receive(self) -> bytes:
        """Receive the next client message, applying request faults.

        Raises:
            trio.EndOfChannel: The client ended the stream, or a fault closed it.
        """
        if self._closed:
            raise trio.EndOfChannel
        data = await self._stream.receive()
        self._received += 1
        limit = self._faults.close_at_received
        if limit is not None and self._received >= limit:
            await self.aclose()
            raise trio.EndOfChannel
        message = _decode(data)
        if message is not None and isinstance(message.get("method"), str) and "id" in message:
            rule = self._faults._take(message, _REQUEST_KINDS)
            if rule is not None:
                exit_code, stderr = rule.payload
                self.mark_crashed(exit_code, stderr)
                await self.aclose()
                raise trio.EndOfChannel
            request_id = message["id"]
            if isinstance(request_id, (int, str)):
                self._requests[request_id] = message
        return data

    async def send(self, data: bytes) -> None:
        """Send one server message, applying response faults.

        Args:
            data: The encoded message.
        """
        await self._faults._wait_released()
        if self._closed:
            raise trio.ClosedResourceError("the stream was closed by an injected fault")
        self._sent += 1
        limit = self._faults.close_at_sent
        if limit is not None and self._sent >= limit:
            await self.aclose()
            return
        message = _decode(data)
        request = None
        if message is not None and "method" not in message and "id" in message:
            request = self._requests.pop(message["id"], None)
        rule = None if request is None else self._faults._take(request, _RESPONSE_KINDS)
        if rule is None:
            await self._stream.send(data)
            return
        if rule.kind == "delay":
            self._nursery.start_soon(self._send_later, rule.seconds, data)
        elif rule.kind == "duplicate":
            await self._stream.send(data)
            await self._stream.send(data)
        elif rule.kind == "error" and message is not None:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": rule.payload}
            await self._stream.send(_encoder.encode(reply))
        elif rule.kind == "garbage":
            await self._stream.send(rule.payload)
        elif rule.kind == "truncate":
            await self._stream.send(data[: len(data) // 2])
        elif rule.kind == "stall":
            self._faults.stall_now()
            await self._faults._wait_released()
            await self._stream.send(data)
        # "drop": nothing is sent

    async def _send_later(self, seconds: float, data: bytes) -> None:
        await trio.sleep(seconds)
        if self._closed:
            return
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, MCPError):
            await self._stream.send(data)

    async def aclose(self) -> None:
        """Close the wrapped stream. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._stream.aclose()


def _decode(data: bytes) -> dict[str, Any] | None:
    try:
        message: Any = _decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(message, dict):
        return message  # pyright: ignore[reportUnknownVariableType]
    return None


class MockClientTransport(MemoryTransport):
    """The client end of a [`MockServer`][trio_mcp.testing.MockServer] connection.

    A `MemoryTransport` that, after a crash, describes the end of the connection the
    way the stdio transport describes a dead server process (exit code, stderr tail).
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
        exit: _Exit,
    ) -> None:
        """Wrap the client's two channels.

        Args:
            send_channel: Client to server.
            receive_channel: Server to client.
            exit: Shared with the server end: how the server "process" ended.
        """
        super().__init__(send_channel, receive_channel)
        self._exit = exit

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Hand one message to the server end (see `MemoryTransport.send()`).

        Args:
            data: The encoded message.
            info: Ignored.

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The server end is gone (with exit code and stderr after a crash).
        """
        try:
            await super().send(data, info)
        except ConnectionClosed as exc:
            if not self._exit.crashed:
                raise
            raise self.closed_error() from exc

    def closed_error(self) -> MCPError:
        """A [`ConnectionClosed`][trio_mcp.ConnectionClosed], with the exit code and stderr after a
        crash."""
        if not self._exit.crashed:
            return super().closed_error()
        return ConnectionClosed(
            "the MCP server process closed its output",
            exit_code=self._exit.exit_code,
            stderr_tail=self._exit.stderr,
        )

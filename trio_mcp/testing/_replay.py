"""Replaying a cassette: the [`ReplayServer`][trio_mcp.testing.ReplayServer] transport factory, on
trio's clock.

Server lines go out with their recorded gaps; client messages are matched against the
cassette (``"[REDACTED]"`` matching any value, in linear time), request ids and progress
tokens mapped; a divergence is answered with an error and reported by
[`ReplayServer.check()`][trio_mcp.testing.ReplayServer.check].
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast

import msgspec
import trio

from .._exceptions import MCPError
from .._transports._base import Transport
from .._transports._memory import MEMORY_BUFFER_SIZE, MemoryServerStream
from ._cassette import load
from ._faults import MockClientTransport, _Exit
from ._scrub import REDACTED, seq_of

__all__ = ["CassetteMismatch", "ReplayServer"]

_decoder = msgspec.json.Decoder()


class CassetteMismatch(AssertionError):
    """The client's messages diverged from the cassette (see
    [`ReplayServer.check()`][trio_mcp.testing.ReplayServer.check])."""


def _matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and REDACTED in expected:
        if expected == REDACTED:
            return True  # a scrubbed value of any type
        return isinstance(actual, str) and _glob(expected.split(REDACTED), actual)
    if isinstance(expected, dict) and isinstance(actual, dict):
        expected_d = cast(dict[str, Any], expected)
        actual_d = cast(dict[str, Any], actual)
        return expected_d.keys() == actual_d.keys() and all(
            _matches(value, actual_d[key]) for key, value in expected_d.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        expected_l = seq_of(expected)
        actual_l = seq_of(actual)
        return len(expected_l) == len(actual_l) and all(
            _matches(e, a) for e, a in zip(expected_l, actual_l, strict=True)
        )
    return bool(expected == actual)


def _glob(parts: list[str], text: str) -> bool:
    """Whether ``text`` is ``parts`` joined by any strings (each ``[REDACTED]`` one gap).

    Linear time: the first part is a prefix, the last a suffix, and each middle part is
    taken at its leftmost place after the previous one (with gaps that match anything,
    the leftmost place never loses a match). A regular expression of ``.*`` gaps would
    backtrack exponentially in the number of gaps.
    """
    first, last = parts[0], parts[-1]
    if len(text) < len(first) + len(last) or not (text.startswith(first) and text.endswith(last)):
        return False
    position, end = len(first), len(text) - len(last)
    for part in parts[1:-1]:
        found = text.find(part, position, end)
        if found < 0:
            return False
        position = found + len(part)
    return True


def _without_meta(params: Any) -> Any:
    """Params without what changes between runs: ``_meta``, and ``clientInfo`` (versions)."""
    if isinstance(params, dict):
        return {
            k: v
            for k, v in cast(dict[str, Any], params).items()
            if k not in ("_meta", "clientInfo")
        }
    return params


def _summary(message: Any) -> str:
    if not isinstance(message, dict):
        return repr(message)
    message = cast(dict[str, Any], message)
    if "method" in message:
        return f"{message['method']} {json.dumps(_without_meta(message.get('params')))}"
    kind = "error" if "error" in message else "result"
    return f"response ({kind}) {json.dumps(message.get(kind))}"


class ReplayServer:
    """A transport factory that plays a cassette back to the client, on trio's clock.

    Server messages go out with the recorded gaps (measured from the client message before
    them), so under ``autojump_clock`` a replay is instant and every virtual time is what
    was recorded. Client messages must match the cassette; a group of client messages
    recorded back to back may arrive in any order. Request ids and progress tokens are
    mapped, so a client numbering differently still matches. ``_meta`` and ``clientInfo``
    (which carry library versions) are never compared.

    On a mismatch, the offending request is answered with a JSON-RPC error (code -32000)
    whose message says what was expected, then the stream ends;
    [`check()`][trio_mcp.testing.ReplayServer.check] raises
    [`CassetteMismatch`][trio_mcp.testing.CassetteMismatch] with the same text.

    Attributes:
        mismatches: Every divergence seen, as text.
    """

    def __init__(
        self,
        cassette: str | os.PathLike[str],
        *,
        match: Literal["params", "method"] = "params",
    ) -> None:
        """Load a cassette.

        Args:
            cassette: The cassette file written by [`Recorder`][trio_mcp.testing.Recorder].
            match: ``"params"`` compares each client message's method and params (without
                ``_meta``); ``"method"`` only its method.

        Raises:
            ValueError: ``match`` is unknown.
            CassetteError: The file is not a cassette or a line of it is malformed (also
                a ``ValueError``).
        """
        if match not in ("params", "method"):
            raise ValueError(f"match must be 'params' or 'method', not {match!r}")
        self.path: Path = Path(cassette)
        header, events, lines = load(cassette)
        self.header: dict[str, Any] = header
        self.events: list[dict[str, Any]] = events
        self._lines = lines  # each event's line in the file
        self.match = match
        self.mismatches: list[str] = []
        self._unplayed: list[str] = []
        self._next = 0  # the first event not played yet (by the last connection)

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        """Open an in-memory connection replaying the cassette (``TransportFactory``).

        Args:
            nursery: Where the replay loop runs.

        Yields:
            The client end.
        """
        to_server_send, to_server_receive = trio.open_memory_channel[bytes](MEMORY_BUFFER_SIZE)
        to_client_send, to_client_receive = trio.open_memory_channel[bytes](MEMORY_BUFFER_SIZE)
        stream = MemoryServerStream(to_client_send, to_server_receive)
        exit = _Exit()
        client = MockClientTransport(to_server_send, to_client_receive, exit)
        nursery.start_soon(self._play, stream, exit)
        try:
            yield client
        finally:
            await client.aclose()

    def check(self) -> None:
        """Raise if the client diverged from the cassette or left part of it unplayed.

        Raises:
            CassetteMismatch: With every divergence found.
        """
        problems = [*self.mismatches, *self._unplayed]
        if not problems and self._next < len(self.events):
            rest = [
                i
                for i in range(self._next, len(self.events))
                if self.events[i].get("from") == "client"
            ]
            if rest:
                expected = _summary(self.events[rest[0]].get("message"))
                problems.append(
                    f"{self.path.name}, line {self._lines[rest[0]]}: the replay ended early; "
                    f"the cassette still expected {expected}"
                )
        if problems:
            raise CassetteMismatch("\n".join(problems))

    async def _play(self, stream: MemoryServerStream, exit: _Exit) -> None:
        self._next = 0
        try:
            await _Replay(self, stream, exit).run()
        finally:
            with trio.move_on_after(1, shield=True):
                await stream.aclose()


class _Replay:
    def __init__(self, server: ReplayServer, stream: MemoryServerStream, exit: _Exit) -> None:
        self.server = server
        self.stream = stream
        self.exit = exit
        self.ids: dict[Any, Any] = {}  # recorded client request id -> live id
        self.live_ids: dict[Any, Any] = {}  # live id -> recorded id
        self.tokens: dict[Any, Any] = {}  # recorded progress token -> live token
        self.shift = trio.current_time()  # live time = recorded t + shift

    def where(self, index: int) -> str:
        return f"{self.server.path.name}, line {self.server._lines[index]}"

    async def run(self) -> None:
        events = self.server.events
        index = 0
        while index < len(events):
            event = events[index]
            if event.get("from") == "server":
                await trio.sleep_until(max(trio.current_time(), self.shift + float(event["t"])))
                if event.get("end"):
                    self.server._next = len(events)
                    self.exit.crashed = event.get("exit_code") not in (None, 0) or bool(
                        event.get("stderr_tail")
                    )
                    self.exit.exit_code = event.get("exit_code")
                    self.exit.stderr = str(event.get("stderr_tail", ""))
                    return
                await self.send(event)
                index += 1
                self.server._next = index
                continue
            group = index
            while group < len(events) and events[group].get("from") == "client":
                group += 1
            if not await self.receive_group(list(range(index, group))):
                return
            index = group
            self.server._next = index
        await self.expect_end()

    async def send(self, event: dict[str, Any]) -> None:
        if "raw" in event:
            data = str(event["raw"]).encode()
        else:
            message: Any = json.loads(json.dumps(event["message"]))
            if isinstance(message, dict):
                message = cast(dict[str, Any], message)
                if "method" not in message and message.get("id") in self.ids:
                    message["id"] = self.ids[message["id"]]
                params: Any = message.get("params")
                if isinstance(params, dict):
                    params = cast(dict[str, Any], params)
                    token = params.get("progressToken")
                    if token is not None and token in self.tokens:
                        params["progressToken"] = self.tokens[token]
                    if message.get("method") == "notifications/cancelled":
                        rid = params.get("requestId")
                        if rid in self.ids:
                            params["requestId"] = self.ids[rid]
            data = json.dumps(message).encode()
        try:
            await self.stream.send(data)
        except (MCPError, trio.ClosedResourceError):
            pass

    async def receive_group(self, indices: list[int]) -> bool:
        waiting = list(indices)
        while waiting:
            try:
                data = await self.stream.receive()
            except trio.EndOfChannel:
                self.server._unplayed.append(
                    f"{self.where(waiting[0])}: the client closed the connection; the cassette "
                    f"still expected {_summary(self.server.events[waiting[0]].get('message'))}"
                )
                return False
            try:
                actual: Any = _decoder.decode(data)
            except msgspec.DecodeError:
                actual = data.decode("utf-8", "replace")
            found = next((i for i in waiting if self.same(self.server.events[i], actual)), None)
            if found is None:
                expected = " or ".join(
                    _summary(self.server.events[i].get("message")) for i in waiting
                )
                await self.diverged(
                    actual,
                    f"cassette mismatch at {self.where(waiting[0])}: expected {expected}; "
                    f"the client sent {_summary(actual)}",
                )
                return False
            waiting.remove(found)
            self.server._next = max(self.server._next, min(waiting, default=found + 1))
            self.remember(self.server.events[found].get("message"), actual)
            self.shift = trio.current_time() - float(self.server.events[found]["t"])
        return True

    def same(self, event: dict[str, Any], actual: Any) -> bool:
        expected: Any = event.get("message", event.get("raw"))
        if not isinstance(expected, dict) or not isinstance(actual, dict):
            return bool(expected == actual)
        expected = cast(dict[str, Any], expected)
        actual = cast(dict[str, Any], actual)
        if expected.get("method") != actual.get("method"):
            return False
        if ("id" in expected) != ("id" in actual):
            return False
        if "method" not in expected:  # a response to a server-to-client request
            if expected.get("id") != actual.get("id"):
                return False
            if self.server.match == "method":
                return ("error" in expected) == ("error" in actual)
            return _matches(expected.get("result"), actual.get("result")) and _matches(
                expected.get("error"), actual.get("error")
            )
        if self.server.match == "method":
            return True
        actual_params = _without_meta(actual.get("params"))
        if actual.get("method") == "notifications/cancelled" and isinstance(actual_params, dict):
            actual_params = dict(cast(dict[str, Any], actual_params))
            rid = actual_params.get("requestId")
            actual_params["requestId"] = self.live_ids.get(rid, rid)
        return _matches(_without_meta(expected.get("params")), actual_params)

    def remember(self, expected: Any, actual: Any) -> None:
        if not isinstance(expected, dict) or not isinstance(actual, dict):
            return
        expected = cast(dict[str, Any], expected)
        actual = cast(dict[str, Any], actual)
        if "method" in expected and "id" in expected:
            self.ids[expected["id"]] = actual.get("id")
            self.live_ids[actual.get("id")] = expected["id"]
        recorded_token = _progress_token(expected)
        if recorded_token is not None:
            self.tokens[recorded_token] = _progress_token(actual)

    async def diverged(self, actual: Any, text: str) -> None:
        self.server.mismatches.append(text)
        if isinstance(actual, dict) and "method" in actual and "id" in actual:
            reply = {
                "jsonrpc": "2.0",
                "id": cast(dict[str, Any], actual)["id"],
                "error": {"code": -32000, "message": text},
            }
            try:
                await self.stream.send(json.dumps(reply).encode())
            except (MCPError, trio.ClosedResourceError):
                pass

    async def expect_end(self) -> None:
        try:
            data = await self.stream.receive()
        except trio.EndOfChannel:
            return
        try:
            actual: Any = _decoder.decode(data)
        except msgspec.DecodeError:
            actual = data.decode("utf-8", "replace")
        await self.diverged(
            actual,
            f"cassette exhausted ({self.server.path.name}): the client sent "
            f"{_summary(actual)} after the last recorded message",
        )


def _progress_token(message: dict[str, Any]) -> Any:
    params: Any = message.get("params")
    if not isinstance(params, dict):
        return None
    meta: Any = cast(dict[str, Any], params).get("_meta")
    if not isinstance(meta, dict):
        return None
    return cast(dict[str, Any], meta).get("progressToken")

"""Record a real MCP session to a cassette file; replay it on trio's (virtual) clock.

A cassette is a JSON Lines file: a header line, then one line per message with the time it
was seen (seconds since the connection opened) and its direction::

    {"cassette": "trio_mcp", "version": 1, "target": {"command": ["python", "server.py"]}}
    {"t": 0.000112, "from": "client", "message": {"jsonrpc": "2.0", "id": 1, ...}}
    {"t": 0.041250, "from": "server", "message": {"jsonrpc": "2.0", "id": 1, ...}}
    {"t": 0.052007, "from": "server", "end": true, "exit_code": 1, "stderr_tail": "..."}

Secrets are scrubbed when the cassette is written: values under secret-looking keys
(``token``, ``apiKey``, ``Authorization``, ``password``...; not ``progressToken``), bearer
credentials, the values of secret-looking environment variables and any ``secrets=`` you name
become ``"[REDACTED]"``. Replay treats ``"[REDACTED]"`` as matching any value.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast

import msgspec
import trio

from .._exceptions import ConnectionClosed, MCPError
from .._transports._base import MessageInfo, RequestFailure, RequestId, Transport, TransportFactory
from .._transports._memory import MEMORY_BUFFER_SIZE, MemoryServerStream
from ._faults import MockClientTransport, _Exit

__all__ = ["REDACTED", "CassetteMismatch", "Recorder", "ReplayServer", "load_cassette", "scrub"]

#: What a scrubbed secret becomes; in a cassette it matches any value on replay.
REDACTED = "[REDACTED]"

_SECRET_SUFFIXES = (
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "credentials",
    "privatekey",
)
_NOT_SECRET = frozenset({"progresstoken", "nextcursor", "cursor"})
_SECRET_ENV = re.compile(r"(?i)(token|secret|password|passwd|api_?key|credential|auth)")
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
_decoder = msgspec.json.Decoder()


def _seq(value: Any) -> list[Any]:
    """``value`` (a list or tuple the caller checked) as a list of unknown items."""
    items: list[Any] = list(value)
    return items


def _map(value: Any) -> dict[Any, Any]:
    """``value`` (a mapping the caller checked) as a dict of unknown items."""
    items: dict[Any, Any] = dict(value)
    return items


def _secret_key(key: str) -> bool:
    normal = key.lower().replace("_", "").replace("-", "")
    return normal not in _NOT_SECRET and normal.endswith(_SECRET_SUFFIXES)


def _env_secrets() -> list[str]:
    return [
        value for name, value in os.environ.items() if _SECRET_ENV.search(name) and len(value) >= 6
    ]


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return ``value`` (decoded JSON) with its secrets replaced by ``"[REDACTED]"``.

    Args:
        value: A decoded JSON value.
        secrets: Literal strings to remove wherever they occur.

    Returns:
        A scrubbed copy.
    """
    needles = sorted((s for s in secrets if s), key=len, reverse=True)
    return _scrub(value, needles)


def _scrub(value: Any, needles: list[str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in cast(dict[str, Any], value).items():
            if _secret_key(key) and isinstance(item, (str, int, float)) and item != "":
                out[key] = REDACTED
            else:
                out[key] = _scrub(item, needles)
        return out
    if isinstance(value, list):
        return [_scrub(item, needles) for item in _seq(value)]
    if isinstance(value, str):
        for needle in needles:
            value = value.replace(needle, REDACTED)
        return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", value)
    return value


def _describe(target: Any) -> Any:
    """A JSON description of what was recorded (a parameters object's simple fields)."""
    if isinstance(target, str):
        return target
    if isinstance(target, (list, tuple)):
        return [str(part) for part in _seq(target)]
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        fields: dict[str, Any] = {"type": type(target).__name__}
        for item in dataclasses.fields(target):
            value = getattr(target, item.name)
            if isinstance(value, (str, int, float, bool)) or value is None:
                fields[item.name] = value
            elif isinstance(value, Mapping):
                fields[item.name] = {str(k): str(v) for k, v in _map(value).items()}
            elif isinstance(value, (list, tuple)):
                fields[item.name] = [str(v) for v in _seq(value)]
            elif isinstance(value, os.PathLike):
                fields[item.name] = os.fspath(cast("os.PathLike[str]", value))
        return fields
    return type(target).__name__


class Recorder:
    """A transport factory that records a real session to a cassette file.

    Connect through it instead of the real target; everything else is unchanged::

        recorder = Recorder(["python", "server.py"], "tests/cassettes/server.jsonl")
        async with trio_mcp.open_mcp_session(nursery, recorder) as session:
            await session.call_tool("echo", {"text": "hi"})

    The cassette is written when the transport closes (each connection overwrites it). The
    recording transport does not share the era cache (its ``era_key`` is ``None``), so the
    era probe is always recorded and a replay sees the same opening.

    Attributes:
        path: The cassette file.
        events: The scrubbed events of the last connection (header excluded).
    """

    def __init__(
        self,
        target: Any,
        path: str | os.PathLike[str],
        *,
        secrets: Iterable[str] = (),
        scrub_env: bool = True,
        **options: Any,
    ) -> None:
        """Record sessions to ``target``.

        Args:
            target: What ``open_mcp_session`` would take: an argv list, a command line, a
                URL, a parameters object or a transport factory.
            path: Where to write the cassette (JSON Lines).
            secrets: Extra literal strings to scrub (API keys, tokens...).
            scrub_env: Also scrub the values of environment variables whose names look
                secret (``*TOKEN*``, ``*SECRET*``, ``*API_KEY*``, ``*PASSWORD*``...).
            **options: Transport options, as ``open_mcp_session`` takes them (``env=``,
                ``headers=``...).
        """
        from .._connect import _resolve_target

        self._factory = _resolve_target(target, dict(options))
        self.path: Path = Path(path)
        self._secrets = [*secrets, *(_env_secrets() if scrub_env else [])]
        self.events: list[dict[str, Any]] = []

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        """Open the real transport, wrapped in a recorder (the ``TransportFactory`` method).

        Args:
            nursery: Where the real transport's tasks run.

        Yields:
            The recording transport.
        """
        if isinstance(self._factory, Transport):
            transport = _RecordingTransport(self._factory, self)
            try:
                yield transport
            finally:
                await transport.aclose()
                self._write(transport.events)
            return
        factory: TransportFactory = self._factory
        async with factory.open_transport(nursery) as inner:
            transport = _RecordingTransport(inner, self)
            try:
                yield transport
            finally:
                self._write(transport.events)

    def _scrub(self, value: Any) -> Any:
        return _scrub(value, sorted(set(self._secrets), key=len, reverse=True))

    def _write(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        header = {
            "cassette": "trio_mcp",
            "version": 1,
            "target": self._scrub(_describe(self._factory)),
        }
        lines = [json.dumps(header)] + [json.dumps(event) for event in events]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


class _RecordingTransport(Transport):
    """Delegates to the real transport, noting every message with its time."""

    def __init__(self, inner: Transport, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder
        self._start = trio.current_time()
        self.events: list[dict[str, Any]] = []
        self.needs_info = inner.needs_info
        self.can_probe = inner.can_probe

    def _note(self, origin: str, data: bytes) -> None:
        event: dict[str, Any] = {"t": round(trio.current_time() - self._start, 6), "from": origin}
        try:
            event["message"] = self._recorder._scrub(_decoder.decode(data))
        except msgspec.DecodeError:
            event["raw"] = self._recorder._scrub(data.decode("utf-8", "replace"))
        self.events.append(event)

    @property
    def wants_param_headers(self) -> bool:
        return self._inner.wants_param_headers

    def attach(self, fail_request: RequestFailure) -> None:
        self._inner.attach(fail_request)

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        super().negotiated(modern=modern, protocol_version=protocol_version)
        self._inner.negotiated(modern=modern, protocol_version=protocol_version)

    async def fallback(self) -> bool:
        return await self._inner.fallback()

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        self._note("client", data)
        await self._inner.send(data, info)

    async def receive(self) -> bytes:
        try:
            data = await self._inner.receive()
        except trio.EndOfChannel:
            self._note_end(self._inner.closed_error())
            raise
        except MCPError as exc:
            self._note_end(exc)
            raise
        self._note("server", data)
        return data

    def _note_end(self, error: MCPError) -> None:
        event: dict[str, Any] = {
            "t": round(trio.current_time() - self._start, 6),
            "from": "server",
            "end": True,
        }
        if isinstance(error, ConnectionClosed):
            if error.exit_code is not None:
                event["exit_code"] = error.exit_code
            if error.stderr_tail:
                event["stderr_tail"] = self._recorder._scrub(error.stderr_tail)
        self.events.append(event)

    def cancel_request(self, request_id: RequestId) -> bool:
        return self._inner.cancel_request(request_id)

    def closed_error(self) -> MCPError:
        return self._inner.closed_error()

    async def aclose(self) -> None:
        await self._inner.aclose()


class CassetteMismatch(AssertionError):
    """The client's messages diverged from the cassette (see :meth:`ReplayServer.check`)."""


def load_cassette(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a cassette file: its header and its events.

    Args:
        path: The cassette (JSON Lines).

    Returns:
        The header dict and the list of event dicts.

    Raises:
        ValueError: The file is not a trio_mcp cassette.
    """
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path}: empty cassette")
    header: Any = json.loads(lines[0])
    if not isinstance(header, dict) or _map(header).get("cassette") != "trio_mcp":
        raise ValueError(f"{path}: not a trio_mcp cassette (no header line)")
    return _map(header), [json.loads(line) for line in lines[1:]]


def _matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and REDACTED in expected:
        if isinstance(actual, str) and expected != REDACTED:
            pattern = ".*".join(re.escape(part) for part in expected.split(REDACTED))
            return re.fullmatch(pattern, actual, re.DOTALL) is not None
        return True
    if isinstance(expected, dict) and isinstance(actual, dict):
        expected_d = cast(dict[str, Any], expected)
        actual_d = cast(dict[str, Any], actual)
        return expected_d.keys() == actual_d.keys() and all(
            _matches(value, actual_d[key]) for key, value in expected_d.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        expected_l = _seq(expected)
        actual_l = _seq(actual)
        return len(expected_l) == len(actual_l) and all(
            _matches(e, a) for e, a in zip(expected_l, actual_l, strict=True)
        )
    return bool(expected == actual)


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
    whose message says what was expected, then the stream ends; :meth:`check` raises
    :class:`CassetteMismatch` with the same text.

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
            cassette: The cassette file written by :class:`Recorder`.
            match: ``"params"`` compares each client message's method and params (without
                ``_meta``); ``"method"`` only its method.

        Raises:
            ValueError: ``match`` is unknown or the file is not a cassette.
        """
        if match not in ("params", "method"):
            raise ValueError(f"match must be 'params' or 'method', not {match!r}")
        self.path: Path = Path(cassette)
        header, events = load_cassette(cassette)
        self.header: dict[str, Any] = header
        self.events: list[dict[str, Any]] = events
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
            rest = [e for e in self.events[self._next :] if e.get("from") == "client"]
            if rest:
                problems.append(
                    f"{self.path.name}, line {self.events.index(rest[0]) + 2}: the replay "
                    f"ended early; the cassette still expected {_summary(rest[0].get('message'))}"
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
        return f"{self.server.path.name}, line {index + 2}"

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

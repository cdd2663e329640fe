"""Record a real MCP session to a cassette file; replay it on trio's (virtual) clock.

A cassette is a JSON Lines file: a header line, then one line per message with the time it
was seen (seconds since the connection opened) and its direction::

    {"cassette": "trio_mcp", "version": 1, "target": {"command": ["python", "server.py"]}}
    {"t": 0.000112, "from": "client", "message": {"jsonrpc": "2.0", "id": 1, ...}}
    {"t": 0.041250, "from": "server", "message": {"jsonrpc": "2.0", "id": 1, ...}}
    {"t": 0.052007, "from": "server", "end": true, "exit_code": 1, "stderr_tail": "..."}

Secrets are scrubbed when the cassette is written, by one rule used for every line it
writes (header, messages, raw lines, stderr): a name is secret when it looks like one
(:func:`is_secret_name`: ``token``, ``apiKey``, ``Authorization``, ``AWS_SECRET_ACCESS_KEY``,
``PGPASSWORD``...; not ``progressToken`` or ``maxTokens``); values under secret names, the
userinfo of URLs (``https://user:pass@host``), bearer credentials, ``name=value`` pairs with
a secret name, the values of secret-named environment variables (this process's and the
``env=`` given to the recorded server) and any ``secrets=`` you name become
``"[REDACTED]"``. Of the recorded server's ``env=`` and ``headers=`` only the names are
written. Replay treats ``"[REDACTED]"`` as matching any value (in linear time).

A cassette that does not load (truncated, edited by hand) raises
:class:`~trio_mcp.testing.CassetteError` naming the file and line.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast

import msgspec
import trio

from .._connect import _resolve_target
from .._exceptions import CassetteError, ConnectionClosed, MCPError
from .._transports._base import MessageInfo, RequestFailure, RequestId, Transport, TransportFactory
from .._transports._memory import MEMORY_BUFFER_SIZE, MemoryServerStream
from ._faults import MockClientTransport, _Exit

__all__ = [
    "REDACTED",
    "CassetteMismatch",
    "Recorder",
    "ReplayServer",
    "is_secret_name",
    "load_cassette",
    "scrub",
]

#: What a scrubbed secret becomes; in a cassette it matches any value on replay.
REDACTED = "[REDACTED]"

# A name is secret when (letters and digits only, lowercased) it ends with one of these,
# or contains one of the fragments anywhere.
_SECRET_SUFFIXES = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "sessionkey",
    "signingkey",
    "auth",
    "authorization",
    "cookie",
    "credential",
    "credentials",
)
_SECRET_FRAGMENTS = ("password", "passwd", "secret", "credential")
_NOT_SECRET = frozenset({"progresstoken", "nextcursor", "cursor", "maxtokens"})
# Values shorter than this are not scrubbed wherever they occur (they would mangle text).
_MIN_NEEDLE = 6
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
# scheme://userinfo@ : the userinfo (user, or user:password) is a credential
# (each pattern starts only where a run of its first characters starts: linear time)
_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)([^/?#\s@\[\]]+)@")
# name=value, name: value, "name": "value" (a value up to a space, quote, & ; or ,)
_PAIR = re.compile(r"""(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)"?[ \t]*[=:][ \t]*"?""")
_PAIR_VALUE = re.compile(r"""[^\s"'&;,]+""")
_decoder = msgspec.json.Decoder()


def _seq(value: Any) -> list[Any]:
    """``value`` (a list or tuple the caller checked) as a list of unknown items."""
    items: list[Any] = list(value)
    return items


def _map(value: Any) -> dict[Any, Any]:
    """``value`` (a mapping the caller checked) as a dict of unknown items."""
    items: dict[Any, Any] = dict(value)
    return items


def is_secret_name(name: str) -> bool:
    """Whether a key, header, flag or environment variable named ``name`` holds a secret.

    The one rule the cassette uses for names, wherever it writes: ``token``,
    ``access_token``, ``apiKey``, ``X-Api-Key``, ``Authorization``, ``Cookie``,
    ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``, ``--client-secret`` are
    secret; ``progressToken``, ``maxTokens``, ``nextCursor``, ``tokenEndpoint`` are not.

    Args:
        name: The name (any case, ``_``/``-``/``.`` separators, leading dashes allowed).

    Returns:
        True if values under this name are scrubbed.
    """
    normal = "".join(ch for ch in name.lower() if ch.isalnum())
    if not normal or normal in _NOT_SECRET:
        return False
    return normal.endswith(_SECRET_SUFFIXES) or any(f in normal for f in _SECRET_FRAGMENTS)


def _secret_text(text: str, needles: list[str]) -> str:
    """``text`` with its secrets scrubbed: the one rule for every string a cassette writes."""
    for needle in needles:
        text = text.replace(needle, REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    for match in _PAIR.finditer(text):
        if match.start() < done or not is_secret_name(match.group(1)):
            continue
        value = _PAIR_VALUE.match(text, match.end())
        if value is not None:
            pieces += [text[done : match.end()], REDACTED]
            done = value.end()
    return "".join(pieces) + text[done:] if pieces else text


def _needles(secrets: Iterable[str]) -> list[str]:
    """Literal secrets, longest first (so a secret containing another goes whole)."""
    return sorted({s for s in secrets if s}, key=len, reverse=True)


def _value_secrets(name: str, value: str) -> list[str]:
    """What of an environment variable's (or header's) value is secret, to scrub anywhere."""
    found = [value] if is_secret_name(name) and len(value) >= _MIN_NEEDLE else []
    for match in _USERINFO.finditer(value):
        userinfo = match.group(2)
        found += [userinfo, *(part for part in userinfo.split(":") if len(part) >= _MIN_NEEDLE)]
    return found


def _env_secrets() -> list[str]:
    return [s for name, value in os.environ.items() for s in _value_secrets(name, value)]


def _target_secrets(target: Any) -> list[str]:
    """The secret values of a parameters object's mappings (``env=``, ``headers=``)."""
    found: list[str] = []
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        for item in dataclasses.fields(target):
            value = getattr(target, item.name)
            if isinstance(value, Mapping):
                for key, entry in _map(value).items():
                    found += _value_secrets(str(key), str(entry))
    return found


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return ``value`` (decoded JSON) with its secrets replaced by ``"[REDACTED]"``.

    The same rule as the cassette's: values under secret names (:func:`is_secret_name`),
    URL userinfo, bearer credentials, ``name=value`` pairs with a secret name, and the
    literal ``secrets``.

    Args:
        value: A decoded JSON value.
        secrets: Literal strings to remove wherever they occur.

    Returns:
        A scrubbed copy.
    """
    return _scrub(value, _needles(secrets))


def _scrub(value: Any, needles: list[str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in cast(dict[str, Any], value).items():
            if is_secret_name(key) and isinstance(item, (str, int, float)) and item != "":
                out[key] = REDACTED
            else:
                out[key] = _scrub(item, needles)
        return out
    if isinstance(value, list):
        return [_scrub(item, needles) for item in _seq(value)]
    if isinstance(value, str):
        return _secret_text(value, needles)
    return value


def _argv(parts: Iterable[Any], needles: list[str]) -> list[str]:
    """An argv, scrubbed: the value after a secret flag (``--token X``) goes too."""
    out: list[str] = []
    hide_next = False
    for part in parts:
        text = str(part)
        if hide_next:
            out.append(REDACTED)
        else:
            out.append(_secret_text(text, needles))
        hide_next = text.startswith("-") and "=" not in text and is_secret_name(text)
    return out


def _describe(target: Any, needles: list[str]) -> Any:
    """A scrubbed JSON description of what was recorded (a parameters object's simple fields).

    Mappings (``env=``, ``headers=``) are written as their names only.
    """
    if isinstance(target, str):
        return _secret_text(target, needles)
    if isinstance(target, (list, tuple)):
        return _argv(_seq(target), needles)
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        fields: dict[str, Any] = {"type": type(target).__name__}
        for item in dataclasses.fields(target):
            value = getattr(target, item.name)
            if isinstance(value, str):
                fields[item.name] = _secret_text(value, needles)
            elif isinstance(value, (int, float, bool)) or value is None:
                fields[item.name] = value
            elif isinstance(value, Mapping):
                fields[item.name] = sorted(str(k) for k in _map(value))
            elif isinstance(value, (list, tuple)):
                fields[item.name] = _argv(_seq(value), needles)
            elif isinstance(value, os.PathLike):
                path = os.fspath(cast("os.PathLike[str]", value))
                fields[item.name] = _secret_text(path, needles)
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
            scrub_env: Also scrub the values of this process's environment variables whose
                names look secret (:func:`is_secret_name`) and the userinfo of URLs in any
                of them. The secret values of the target's own ``env=`` and ``headers=``
                are always scrubbed (and only their names are written to the header).
            **options: Transport options, as ``open_mcp_session`` takes them (``env=``,
                ``headers=``...).
        """
        self._factory = _resolve_target(target, dict(options))
        self.path: Path = Path(path)
        self._needles = _needles(
            [*secrets, *_target_secrets(self._factory), *(_env_secrets() if scrub_env else [])]
        )
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
        return _scrub(value, self._needles)

    def _write(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        header = {
            "cassette": "trio_mcp",
            "version": 1,
            "target": self._scrub(_describe(self._factory, self._needles)),
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
    """Read a cassette file: its header and its events, every line checked.

    Args:
        path: The cassette (JSON Lines).

    Returns:
        The header dict and the list of event dicts.

    Raises:
        CassetteError: The file is not a trio_mcp cassette, or a line of it is malformed
            (not JSON, not an object, a missing or mistyped field); the error names the
            file and the line. It is also a :class:`ValueError`.
        OSError: The file cannot be read.
    """
    header, events, _ = _load(path)
    return header, events


def _load(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[int]]:
    """The header, the events and each event's 1-based line in the file."""
    name = os.fspath(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = data[: exc.start].count(b"\n") + 1
        raise CassetteError(name, where, "not UTF-8 text") from exc
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value: Any = _decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise CassetteError(name, number, f"not a JSON line ({exc}); truncated?") from exc
        if not isinstance(value, dict):
            raise CassetteError(name, number, f"expected a JSON object, got {_kind(value)}")
        item = _map(value)
        if header is None:
            if item.get("cassette") != "trio_mcp":
                raise CassetteError(name, number, "not a trio_mcp cassette (no header line)")
            if item.get("version") != 1:
                raise CassetteError(
                    name, number, f"unsupported cassette version {item.get('version')!r}"
                )
            header = item
            continue
        problem = _event_problem(item)
        if problem is not None:
            raise CassetteError(name, number, problem)
        events.append(item)
        numbers.append(number)
    if header is None:
        raise CassetteError(name, None, "empty cassette (no header line)")
    return header, events, numbers


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _event_problem(event: dict[str, Any]) -> str | None:
    """What is wrong with one event line, or None."""
    t: object = event.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return "'t' must be a number (seconds since the connection opened)"
    if not math.isfinite(t) or t < 0:
        return f"'t' must be a finite number >= 0, not {t!r}"
    origin = event.get("from")
    if origin not in ("client", "server"):
        return f"'from' must be 'client' or 'server', not {origin!r}"
    if "end" in event:
        if event["end"] is not True or origin != "server":
            return "'end' must be true, on a server line"
        if not isinstance(event.get("exit_code", 0), int) or isinstance(
            event.get("exit_code"), bool
        ):
            return "'exit_code' must be an integer"
        if not isinstance(event.get("stderr_tail", ""), str):
            return "'stderr_tail' must be a string"
        return None
    if "message" in event:
        return None
    if isinstance(event.get("raw"), str):
        return None
    return "a line needs a 'message' (JSON), a 'raw' string or 'end': true"


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
        expected_l = _seq(expected)
        actual_l = _seq(actual)
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
            ValueError: ``match`` is unknown.
            CassetteError: The file is not a cassette or a line of it is malformed (also
                a ``ValueError``).
        """
        if match not in ("params", "method"):
            raise ValueError(f"match must be 'params' or 'method', not {match!r}")
        self.path: Path = Path(cassette)
        header, events, lines = _load(cassette)
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

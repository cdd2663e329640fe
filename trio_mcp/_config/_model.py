"""The config model: the typed result of loading a config file.

One job: [`ConfigInput`][trio_mcp.config.ConfigInput] (a VS Code ``inputs`` entry),
[`ServerConfig`][trio_mcp.config.ServerConfig] (one server entry with every ``${...}`` resolved; its
``repr`` and [`ServerConfig.redact()`][trio_mcp.config.ServerConfig.redact] hide interpolated
secrets) and [`MCPConfig`][trio_mcp.config.MCPConfig] (a whole file). Parsing lives in ``_loading``,
consent pinning in ``_consent``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import msgspec

from .._connect import Target, _resolve_target
from ._redaction import track

__all__ = [
    "ConfigInput",
    "Dialect",
    "InputCallback",
    "MCPConfig",
    "ServerConfig",
    "TransportKind",
    "target_parts",
]

Dialect = Literal["mcpServers", "vscode"]
TransportKind = Literal["stdio", "http", "sse", "websocket"]


class ConfigInput(msgspec.Struct, kw_only=True, frozen=True):
    """A VS Code ``inputs`` entry: a value the user is asked for, used as ``${input:id}``.

    Attributes:
        id: The name entries use in ``${input:id}``.
        type: ``"promptString"`` (free text) or ``"pickString"`` (one of ``options``);
            other types (``"command"``) cannot be answered outside VS Code.
        description: The prompt shown to the user.
        password: Hide what the user types (API keys): a CLI must not echo it.
        default: The value offered by default.
        options: The choices of a ``pickString`` input.
    """

    id: str
    type: str = "promptString"
    description: str = ""
    password: bool = False
    default: str | None = None
    options: list[str | dict[str, Any]] | None = None


InputCallback = Callable[[ConfigInput], Awaitable[str]]
"""Answers one ``${input:id}``: prompt the user (hide the typing when ``password``)."""


_HIDDEN: Final = "***"


class ServerConfig(msgspec.Struct, kw_only=True, frozen=True, weakref=True):
    """One server entry of a config file, with every ``${...}`` resolved.

    Its ``repr`` hides the values of ``env`` and ``headers`` (they hold secrets) and
    shows the command, arguments, URL and working directory with each interpolated
    value replaced by its ``${...}`` template.

    Attributes:
        name: The entry's key in the file.
        transport: ``"stdio"``, ``"http"`` (Streamable HTTP, falling back to HTTP+SSE),
            ``"sse"`` (legacy HTTP+SSE only) or ``"websocket"``.
        command: The program of a stdio server.
        args: Its arguments.
        env: Extra environment variables for a stdio server.
        cwd: The working directory of a stdio server.
        url: The URL of a remote server.
        headers: Extra HTTP headers for a remote server (e.g. ``Authorization``).
        env_file: The ``envFile`` the entry names (resolved; its variables are in
            ``env``), if any.
        fingerprint: The SHA-256 of the entry as written (before interpolation) and of
            the contents of its ``envFile``, for consent pinning.
        source: The file the entry came from.
        interpolated: Each value that ``${env:NAME}``, ``${NAME}`` or ``${input:id}``
            put into the entry, with the variable it came from: what
            [`redact()`][trio_mcp.config.ServerConfig.redact] hides. Never shown by ``repr``.
    """

    name: str
    transport: TransportKind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    env_file: str | None = None
    fingerprint: str = ""
    source: str = ""
    interpolated: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.interpolated:
            track(self)  # the log filter hides its values while it lives

    def redact(self, text: str) -> str:
        """Put the ``${...}`` variable back in place of each value interpolated from one.

        The group uses it on the errors and log lines of this server; use it on anything
        of yours that may quote the command, arguments or URL.

        Args:
            text: Any text, e.g. an error message.

        Returns:
            ``text`` with every interpolated value replaced by its template
            (``${env:API_KEY}``), longest value first.
        """
        for value, template in sorted(self.interpolated, key=lambda pair: -len(pair[0])):
            if value in text:
                text = text.replace(value, template)
        return text

    def __repr__(self) -> str:
        redact = self.redact
        parts = [f"name={self.name!r}", f"transport={self.transport!r}"]
        if self.command is not None:
            parts.append(f"command={redact(self.command)!r}")
            parts.append(f"args={tuple(redact(arg) for arg in self.args)!r}")
        if self.url is not None:
            parts.append(f"url={redact(self.url)!r}")
        if self.cwd is not None:
            parts.append(f"cwd={redact(self.cwd)!r}")
        if self.env:
            parts.append(f"env={dict.fromkeys(self.env, _HIDDEN)!r}")
        if self.headers:
            parts.append(f"headers={dict.fromkeys(self.headers, _HIDDEN)!r}")
        return f"ServerConfig({', '.join(parts)})"

    def target(self) -> tuple[Target, dict[str, Any]]:
        """The target [`open_mcp_session()`][trio_mcp.open_mcp_session] takes: a parameters object.

        Returns:
            ``(target, {})``: a [`StdioParameters`][trio_mcp.transports.StdioParameters] (command,
                arguments,
            ``env``, ``cwd``), a
                [`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters] or
            [`WebSocketParameters`][trio_mcp.transports.WebSocketParameters] (URL, ``headers``), or
                a
            [`SSEParameters`][trio_mcp.transports.SSEParameters]. The options are empty: the entry's
                ``env``,
            ``cwd`` and ``headers`` are on the parameters object, so
            ``open_mcp_session(target, **options)`` gives no deprecation warning.

        Raises:
            TypeError: The URL is neither http(s) nor ws(s) and the entry has headers.
        """
        target, options = target_parts(self)
        return _resolve_target(target, options), {}


def target_parts(entry: ServerConfig) -> tuple[Target, dict[str, Any]]:
    """An entry's target and transport options, not yet put together.

    For code that adds options of its own before building the parameters object (the
    CLI's ``--env`` and ``--header``; a group's per-server options): an argv list with
    ``env``/``cwd`` options for stdio; a URL with ``headers`` for Streamable HTTP and
    WebSocket; an [`SSEParameters`][trio_mcp.transports.SSEParameters] (and no options) for legacy
    SSE.
    """
    if entry.transport == "stdio":
        assert entry.command is not None
        options: dict[str, Any] = {}
        if entry.env:
            options["env"] = dict(entry.env)
        if entry.cwd:
            options["cwd"] = entry.cwd
        return [entry.command, *entry.args], options
    assert entry.url is not None
    if entry.transport == "sse":
        # on first use (import cost): importing trio_mcp does not load the SSE transport
        from ..transports import SSEParameters

        return SSEParameters(entry.url, headers=dict(entry.headers) or None), {}
    return entry.url, ({"headers": dict(entry.headers)} if entry.headers else {})


class MCPConfig(msgspec.Struct, kw_only=True, frozen=True):
    """A loaded config file: its servers, ready to open as a group.

    Attributes:
        path: The file it came from.
        dialect: ``"mcpServers"`` or ``"vscode"``.
        servers: The enabled servers by name, in file order.
        disabled: The names of entries marked ``"disabled": true`` (not in ``servers``).
        inputs: The VS Code ``inputs`` declared.
    """

    path: str
    dialect: Dialect
    servers: dict[str, ServerConfig]
    disabled: tuple[str, ...] = ()
    inputs: tuple[ConfigInput, ...] = ()

"""Targets (command line, URL, named config entry), session options, exit codes."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from .._exceptions import (
    AuthError,
    ConfigError,
    ConnectionClosed,
    HTTPStatusError,
    LoginRequiredError,
    MCPError,
    ProtocolError,
    ServerError,
    ServerUnavailableError,
    TransportError,
    UnsupportedProtocolVersionError,
)
from .._redact import display_url
from ._args import UnknownName, UsageError, did_you_mean

__all__ = [
    "EXIT_AUTH",
    "EXIT_CONNECTION",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PROTOCOL",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "Connection",
    "classify",
    "resolve",
    "with_login_hint",
]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECTION = 3
EXIT_AUTH = 4
EXIT_TIMEOUT = 5
EXIT_PROTOCOL = 6
EXIT_INTERRUPTED = 130


class ConnectTimeout(trio.TooSlowError):
    """Connecting (start, handshake) took longer than ``--timeout``."""


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit status and error kind (for the JSON envelope) of an exception."""
    if isinstance(exc, UnknownName):
        return EXIT_TOOL_ERROR, "not_found"
    if isinstance(exc, (UsageError, ConfigError)):
        return EXIT_USAGE, "usage"
    if isinstance(exc, AuthError) or (isinstance(exc, HTTPStatusError) and exc.status_code == 401):
        return EXIT_AUTH, "auth"
    if isinstance(exc, trio.TooSlowError):
        return EXIT_TIMEOUT, "timeout"
    if isinstance(exc, UnsupportedProtocolVersionError):
        return EXIT_PROTOCOL, "protocol"
    if isinstance(exc, ServerError):
        return EXIT_TOOL_ERROR, "server_error"
    if isinstance(exc, (TransportError, ConnectionClosed, ServerUnavailableError, OSError)):
        return EXIT_CONNECTION, "connection"
    if isinstance(exc, (ProtocolError, MCPError)):
        return EXIT_PROTOCOL, "protocol"
    return EXIT_PROTOCOL, "internal"


def with_login_hint(exc: Exception, conn: Connection | None, args: argparse.Namespace) -> Exception:
    """``exc``, or for an HTTP target that needs a login, a
    [`LoginRequiredError`][trio_mcp.auth.LoginRequiredError] whose message names the command to run
    (``trio-mcp auth login TARGET``).

    A bare ``401`` (no token stored at all) and the headless provider's
    [`LoginRequiredError`][trio_mcp.auth.LoginRequiredError] both become that error (exit status 4,
    ``auth``).
    """
    if conn is None or conn.kind != "http":
        return exc
    unauthorized = isinstance(exc, HTTPStatusError) and exc.status_code == 401
    if not unauthorized and not isinstance(exc, LoginRequiredError):
        return exc
    command = f"trio-mcp auth login {shlex.quote(args.target)}"
    if args.config:
        command += f" --config {shlex.quote(args.config)}"
    if unauthorized:
        url = display_url(getattr(exc, "url", "") or args.target)
        sent = {name.lower() for name in conn.options.get("headers", {})}
        if "authorization" in sent:
            message = f"{url} refused the Authorization header given (HTTP 401)"
        else:
            message = f"{url} requires authorization (HTTP 401) and no login is stored for it"
    else:
        message = str(exc)
    hinted = LoginRequiredError(f"{message}; log in first: {command}")
    hinted.__cause__ = exc
    return hinted


@dataclass
class Connection:
    """Where to connect and how: the target and ``open_mcp_session`` transport options."""

    label: str
    target: Any
    options: dict[str, Any]
    kind: str  # "stdio", "http", "websocket", "sse"
    stderr_tail: deque[str] = field(default_factory=lambda: deque[str](maxlen=20))

    def cache_key(self) -> str:
        """A stable key for this target (the schema cache)."""
        return hashlib.sha256(self.label.encode()).hexdigest()[:32]


def _pairs(items: list[str] | None, sep: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise UsageError(f"{what} {item!r}: use KEY{sep}VALUE")
        out[key.strip()] = value.strip() if sep == ":" else value
    return out


def _is_name(target: str) -> bool:
    return bool(target) and not any(c in target for c in " /\\:\t") and not target.startswith(".")


async def _ask_input(config_input: Any) -> str:
    if not sys.stdin.isatty():
        raise UsageError(f"the config needs input {config_input.id!r}; run on a terminal")
    import getpass

    label = f"{config_input.description or config_input.id}: "
    reader: Callable[[str], str] = getpass.getpass if config_input.password else input
    return await trio.to_thread.run_sync(reader, label, abandon_on_cancel=True)


async def _no_input(config_input: Any) -> str:
    raise UsageError(f"the config needs input {config_input.id!r}")


async def _from_config(
    args: argparse.Namespace, *, quiet: bool = False
) -> tuple[Any, dict[str, Any], str] | None:
    """Look the target up in the config files (``_servers.config_sources``), in order.

    A server from the current folder's config runs only with consent
    (``_servers.approve_project_server``). ``quiet`` (shell completion): nothing is asked,
    printed or approved.
    """
    from .._config import load_config
    from .._config._model import target_parts
    from ._servers import approve_project_server, config_sources

    explicit: str | None = args.config
    seen: list[str] = []
    for source in config_sources(explicit):
        config = await load_config(source.path, inputs=_no_input if quiet else _ask_input)
        entry = config.servers.get(args.target)
        if entry is not None:
            if source.origin == "project" and not quiet:
                await approve_project_server(args, entry)
            target, options = target_parts(entry)  # --env, --header are added below
            return target, options, entry.transport
        seen += list(config.servers)
    if explicit:
        names = ", ".join(seen) or "none"
        hint = did_you_mean(args.target, seen)
        raise UsageError(f"no server named {args.target!r} in {explicit}{hint} (it has: {names})")
    if not quiet and shutil.which(args.target) is None:
        # Not a configured name, and no program of that name either: running it would
        # only fail with "not found"; say where we looked and what is close.
        searched = [s.path for s in config_sources(None, existing=False)]
        hint = did_you_mean(args.target, seen)
        names = f"; the servers configured: {', '.join(seen)}" if seen else ""
        raise FileNotFoundError(  # a server that cannot be started: exit status 3
            f"no server named {args.target!r}{hint} in the config files searched "
            f"({', '.join(searched)}), and no program of that name{names}"
        )
    return None


def token_store_path() -> Path:
    """Where ``trio-mcp auth`` keeps tokens (``$XDG_CONFIG_HOME/trio-mcp/tokens.json``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "trio-mcp" / "tokens.json"


async def resolve(
    args: argparse.Namespace, on_stderr: Callable[[str], None] | None, *, quiet: bool = False
) -> Connection:
    """Turn the command line's target and options into a `Connection`.

    ``quiet`` (shell completion): a config entry is looked up without asking anything.

    Raises:
        UsageError: Options that do not fit the target, an unknown config entry.
        FileNotFoundError: A bare name that is neither configured nor a program.
        ConfigError: The config file is invalid.
    """
    env = _pairs(args.env, "=", "--env")
    headers = _pairs(args.header, ":", "--header")
    target_text: str = args.target
    lowered = target_text.lower()
    found: tuple[Any, dict[str, Any], str] | None = None
    if lowered.startswith(("http://", "https://")):
        found = target_text, {}, "http"
    elif lowered.startswith(("ws://", "wss://")):
        found = target_text, {}, "websocket"
    elif args.config or _is_name(target_text):
        found = await _from_config(args, quiet=quiet)
    if found is None:
        try:
            argv = shlex.split(target_text)
        except ValueError as exc:
            raise UsageError(f"cannot split the command line {target_text!r}: {exc}") from None
        if not argv:
            raise UsageError("the target is empty: give a command line, a URL or a server name")
        found = argv, {}, "stdio"
    target, options, kind = found
    if kind == "stdio":
        if headers:
            raise UsageError("--header applies to http(s):// and ws(s):// targets only")
        merged = {**options.get("env", {}), **env}
        if merged:
            options["env"] = merged
        if args.cwd:
            options["cwd"] = args.cwd
        if args.inherit_env:
            options["inherit_env"] = True
        if on_stderr is not None:
            options["on_stderr"] = on_stderr
    else:
        if env or args.cwd or args.inherit_env:
            raise UsageError("--env, --cwd and --inherit-env apply to command-line targets only")
        if kind != "sse":
            merged_headers = {**options.get("headers", {}), **headers}
            if merged_headers:
                options["headers"] = merged_headers
            if args.timeout:
                options["timeout"] = args.timeout
        if kind == "http" and token_store_path().is_file():
            from ..auth import FileTokenStore, OAuth

            # Stored tokens only: `trio-mcp auth login` is where a browser opens.
            options["auth"] = OAuth(store=FileTokenStore(token_store_path()), interactive=False)
    label = target_text if kind != "stdio" or isinstance(target, str) else json.dumps(target)
    if kind == "stdio" and (env or args.cwd):
        label = json.dumps([label, sorted(env), args.cwd])
    return Connection(label=label, target=target, options=options, kind=kind)


def schema_cache_path(conn: Connection) -> Path:
    """The file caching this target's tool schemas."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "trio-mcp" / "tools" / f"{conn.cache_key()}.json"


def read_schema_cache(conn: Connection) -> dict[str, Any] | None:
    """The cached ``{tool name: inputSchema}`` of a target, if any."""
    try:
        data: Any = json.loads(schema_cache_path(conn).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


def write_schema_cache(conn: Connection, schemas: dict[str, Any]) -> None:
    """Remember a target's tool schemas (best effort)."""
    path = schema_cache_path(conn)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(schemas), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


class Interrupted(Exception):
    """The user pressed Ctrl-C (exit status 130)."""


def describe_error(exc: BaseException, *, stderr_shown: bool = False) -> str:
    """What went wrong, its kind said once (``server error -32603 ...``).

    Args:
        exc: The failure.
        stderr_shown: The server's stderr lines were printed as they came (``-v``): the
            message does not repeat them.
    """
    kind = classify(exc)[1]
    message = str(exc) or type(exc).__name__
    tail: object = getattr(exc, "stderr_tail", "")
    if stderr_shown and isinstance(tail, str) and tail:
        message = message.replace(f"; last stderr output:\n{tail}", " (its stderr is above)")
    if kind == "usage":
        return message
    prefix = kind.replace("_", " ")
    return message if message.lower().startswith(prefix) else f"{prefix}: {message}"

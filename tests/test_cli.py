"""The trio-mcp command in plain subprocesses: exit statuses, --json output and envelopes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from trio_mcp.cli._args import UsageError, check_arguments, parse_arguments

from .interop_peers import everything_argv, everything_env, skip_unless_peers

ROOT = Path(__file__).resolve().parent.parent
SERVER = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'cli_server.py'}"


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def envelope(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    assert error["exitCode"] == proc.returncode
    return error


# -- arguments (pure) ----------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "maximum": 5},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array"},
        "name": {"type": "string"},
        "mode": {"enum": ["a", "b"]},
        "either": {"type": ["integer", "string"]},
    },
    "required": ["n"],
    "additionalProperties": False,
}


def test_arguments_are_coerced_by_schema(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("from a file")
    got = parse_arguments(
        ["n=3", "x=2.5", "flag=yes", 'tags=["a"]', "name=42", "mode=b", "either=7", "raw:=[1, 2]"],
        SCHEMA,
    )
    assert got == {
        "n": 3,
        "x": 2.5,
        "flag": True,
        "tags": ["a"],
        "name": "42",
        "mode": "b",
        "either": 7,
        "raw": [1, 2],
    }
    assert parse_arguments([f"name=@{note}"], SCHEMA) == {"name": "from a file"}
    assert parse_arguments(['{"n": 1}', "x=1"], SCHEMA) == {"n": 1, "x": 1}


def test_bad_arguments_say_what_the_schema_expects() -> None:
    with pytest.raises(UsageError, match=r"'n': expected an integer, got 'three'"):
        parse_arguments(["n=three"], SCHEMA)
    with pytest.raises(UsageError) as info:
        check_arguments("t", SCHEMA, {"n": 9, "mode": "c", "bogus": 1})
    text = str(info.value)
    assert "n: must be at most 5, got 9" in text
    assert 'mode: expected one of "a", "b", got "c"' in text
    assert "bogus: unknown argument" in text
    with pytest.raises(UsageError, match=r"n: required \(an integer\)"):
        check_arguments("t", SCHEMA, {})
    with pytest.raises(UsageError, match="use key=value"):
        parse_arguments(['["x"]'], SCHEMA)


# -- exit statuses and --json --------------------------------------------------------------


def test_json_outputs_and_success(cache_env: dict[str, str]) -> None:
    proc = cli("--json", SERVER, "tools", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    names = {tool["name"] for tool in json.loads(proc.stdout)}
    assert {"echo", "add", "slow", "fail", "order"} <= names
    proc = cli("--json", SERVER, "call", "add", "a=2", "b=3.5", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structuredContent"] == {"sum": 5.5}
    assert "_meta" not in proc.stdout and "resultType" not in proc.stdout
    proc = cli("--json", SERVER, "info", env=cache_env)
    info = json.loads(proc.stdout)
    assert info["server"]["name"] == "trio-mcp-demo" and info["era"] in ("modern", "legacy")
    proc = cli("--json", SERVER, "read", "demo://readme", env=cache_env)
    assert json.loads(proc.stdout)["contents"][0]["text"] == "This is the trio_mcp demo server."


def test_human_output_renders_content_types(cache_env: dict[str, str]) -> None:
    proc = cli(SERVER, "call", "picture", env=cache_env)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["a pixel", "[image image/png, 8 bytes]"]
    proc = cli(SERVER, "prompt", "greeting", "name=Ada", env=cache_env)
    assert "Please greet Ada." in proc.stdout


def test_tool_error_exits_1(cache_env: dict[str, str]) -> None:
    proc = cli(SERVER, "call", "fail", "reason=nope", env=cache_env)
    assert proc.returncode == 1
    assert "Tool error" in proc.stdout and "nope" in proc.stdout
    proc = cli("--json", SERVER, "call", "fail", env=cache_env)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["isError"] is True


def test_usage_errors_exit_2_with_envelope(cache_env: dict[str, str]) -> None:
    proc = cli("--json", SERVER, "call", "echo", '["x"]', env=cache_env)
    assert proc.returncode == 2
    assert envelope(proc)["kind"] == "usage"
    assert "Traceback" not in proc.stderr and "ExceptionGroup" not in proc.stderr
    proc = cli("--json", SERVER, "call", "nope", env=cache_env)  # the server's "no": 1
    assert proc.returncode == 1 and "no tool named 'nope'" in envelope(proc)["message"]


def test_invalid_arguments_rejected_before_the_call_is_sent(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    marker = tmp_path / "started"
    env = {**cache_env, "TRIO_MCP_CLI_MARKER": str(marker)}
    # The call is refused against the listed schema, before it is sent; a cached schema
    # (possibly stale) never refuses on its own (tests/test_cli_features.py).
    for _ in range(2):
        proc = cli(SERVER, "--inherit-env", "-v", "call", "add", "a=x", "b=1", env=env)
        assert proc.returncode == 2
        assert "argument 'a': expected a number, got 'x'" in proc.stderr
        assert '"tools/call"' not in proc.stderr


def test_connection_error_exits_3(cache_env: dict[str, str]) -> None:
    proc = cli("--json", "no-such-program-for-trio-mcp", "tools", env=cache_env)
    assert proc.returncode == 3
    assert envelope(proc)["kind"] == "connection"
    proc = cli("--json", "http://127.0.0.1:9/mcp", "tools", env=cache_env)
    assert proc.returncode == 3, proc.stderr


def test_timeout_covers_connecting(cache_env: dict[str, str]) -> None:
    started = time.monotonic()
    proc = cli("--json", "--timeout", "1", "sleep 30", "tools", env=cache_env)
    assert proc.returncode == 5
    assert envelope(proc)["kind"] == "timeout"
    assert time.monotonic() - started < 20


def test_request_timeout_exits_5(cache_env: dict[str, str]) -> None:
    proc = cli("--json", "--timeout", "2", SERVER, "call", "slow", "seconds=30", env=cache_env)
    assert proc.returncode == 5, proc.stderr


def test_env_cwd_and_config(tmp_path: Path, cache_env: dict[str, str]) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {
                        "command": sys.executable,
                        "args": [str(ROOT / "tests" / "servers" / "cli_server.py")],
                        "env": {"PYTHONPATH": str(ROOT)},
                    }
                }
            }
        )
    )
    proc = cli(
        "--json", "--config", str(config), "demo", "call", "echo", "text=from config", env=cache_env
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == "from config"
    proc = cli("--json", "--config", str(config), "other", "tools", env=cache_env)
    assert proc.returncode == 2 and "it has: demo" in envelope(proc)["message"]
    script = f"{sys.executable} -c \"import os; print(os.environ.get('GREETING'), os.getcwd())\""
    del script  # the env and cwd reach the server: checked through the usual-location config below
    (tmp_path / ".mcp.json").write_text(config.read_text())
    sub = tmp_path / "sub"
    sub.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trio_mcp.cli",
            "--json",
            "--yes",  # a project folder's config (.mcp.json) runs only with consent
            "demo",
            "--env",
            "X=1",
            "--cwd",
            str(sub),
            "ping",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), **cache_env},
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def test_verbose_prints_protocol_messages(cache_env: dict[str, str]) -> None:
    proc = cli("-v", SERVER, "call", "echo", "text=hi", env=cache_env)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "hi"
    sent = [line for line in proc.stderr.splitlines() if " → " in line]
    received = [line for line in proc.stderr.splitlines() if " ← " in line]
    assert any('"tools/call"' in line for line in sent)
    assert any('"hi"' in line for line in received)


def test_log_level_shows_server_logs(cache_env: dict[str, str]) -> None:
    for protocol in ("auto", "legacy"):
        proc = cli(
            "--protocol",
            protocol,
            "--log-level",
            "info",
            SERVER,
            "call",
            "log",
            "level=warning",
            "message=careful",
            env=cache_env,
        )
        assert proc.returncode == 0, proc.stderr
        assert "[warning demo] careful" in proc.stderr
    proc = cli(SERVER, "call", "log", "level=warning", "message=careful", env=cache_env)
    assert "careful" not in proc.stderr


def test_auth_status_and_logout_use_the_file_store(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    store = tmp_path / "config" / "trio-mcp" / "tokens.json"
    store.parent.mkdir(parents=True)
    key = json.dumps(["https://as.example", "https://mcp.example/mcp", "cid"])
    store.write_text(
        json.dumps(
            {
                "tokens": {key: {"access_token": "t", "scope": "read", "expires_at": None}},
                "clients": {},
            }
        )
    )
    proc = cli("auth", "status", "--json", "https://mcp.example/mcp", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status["loggedIn"] is True and status["tokens"][0]["scope"] == "read"
    assert "access_token" not in proc.stdout and '"t"' not in proc.stdout
    proc = cli("auth", "logout", "--json", "https://mcp.example/mcp", env=cache_env)
    assert json.loads(proc.stdout)["removed"] == 1
    proc = cli("auth", "status", "--json", "https://mcp.example/mcp", env=cache_env)
    assert json.loads(proc.stdout)["loggedIn"] is False


def test_help_is_fast() -> None:
    started = time.monotonic()
    proc = cli("--help")
    assert proc.returncode == 0 and "exit status" in proc.stdout
    assert time.monotonic() - started < 5  # measured: about 0.15 s


@pytest.mark.interop
def test_against_server_everything(cache_env: dict[str, str]) -> None:
    skip_unless_peers()
    target = shlex.join(everything_argv("stdio"))
    env = {**cache_env}
    args = [f"--env={k}={v}" for k, v in everything_env().items() if k != "PATH"]
    proc = cli("--json", *args, target, "tools", env=env)
    assert proc.returncode == 0, proc.stderr
    names = {tool["name"] for tool in json.loads(proc.stdout)}
    assert "echo" in names
    proc = cli("--json", *args, target, "call", "echo", "message=hello", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "hello" in proc.stdout
    proc = cli("--json", *args, target, "call", "get-sum", "a=x", "b=2", env=env)
    assert proc.returncode == 2
    assert "expected a number" in envelope(proc)["message"]
    proc = cli(*args, target, "call", "get-tiny-image", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "[image image/png" in proc.stdout

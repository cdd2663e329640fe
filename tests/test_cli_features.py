"""The trio-mcp command as a daily tool: stale schema caches, ``$ref`` schemas, exit
statuses, arguments from a file or stdin, ``--output``, ``servers``, project configs and
shell completion (subprocesses; the terminal parts are in test_cli_terminal_features.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp.cli._app import argument_summary
from trio_mcp.cli._args import UsageError, check_arguments, inline_refs, parse_arguments

ROOT = Path(__file__).resolve().parent.parent
SERVER_FILE = ROOT / "tests" / "servers" / "cli_features_server.py"
SERVER = f"{sys.executable} {SERVER_FILE}"
sys.path.insert(0, str(SERVER_FILE.parent))
from cli_features_server import PLOT_SCHEMA  # noqa: E402


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        timeout=timeout,
        cwd=cwd,
    )


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def envelope(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    assert error["exitCode"] == proc.returncode
    return error


# -- 1. a stale schema cache never rejects a valid call ------------------------------------


def test_stale_cached_schema_does_not_reject_a_valid_call(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    proc = cli(SERVER, "tools", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    (cached,) = (tmp_path / "cache" / "trio-mcp" / "tools").glob("*.json")
    schemas = json.loads(cached.read_text())
    # An older version of the server took a string: the cache says so, the server no more.
    schemas["add"] = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    cached.write_text(json.dumps(schemas))
    proc = cli("--json", SERVER, "call", "add", "a=2", "b=3", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 5}
    # ... and the listing that checked the call refreshed the cache.
    assert json.loads(cached.read_text())["add"]["properties"]["a"]["type"] == "number"
    # Arguments that are really wrong are still rejected, against the fresh schema.
    proc = cli("--json", SERVER, "call", "add", "a=x", "b=3", env=cache_env)
    assert proc.returncode == 2
    assert "expected a number, got 'x'" in envelope(proc)["message"]


def test_malformed_words_are_refused_before_the_server_starts(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    marker = tmp_path / "started"
    env = {**cache_env, "TRIO_MCP_CLI_MARKER": str(marker)}
    proc = cli(SERVER, "--inherit-env", "call", "add", "a", env=env)
    assert proc.returncode == 2 and "use key=value" in proc.stderr
    proc = cli(SERVER, "--inherit-env", "call", "add", "@missing.json", env=env)
    assert proc.returncode == 2
    assert not marker.exists()


# -- 2. $ref / $defs / definitions ---------------------------------------------------------


def test_ref_parameters_are_described_and_coerced() -> None:
    summary = argument_summary(PLOT_SCHEMA)
    assert summary == (
        'at: object*, color: "red"|"green", count: integer, label: string|null, chain: object'
    )
    got = parse_arguments(['at={"x": 1, "y": 2}', "count=3", "color=red", "label=7"], PLOT_SCHEMA)
    assert got == {"at": {"x": 1, "y": 2}, "count": 3, "color": "red", "label": "7"}
    with pytest.raises(UsageError, match="'count': expected an integer, got 'x'"):
        parse_arguments(["count=x"], PLOT_SCHEMA)
    with pytest.raises(UsageError) as info:
        check_arguments("plot", PLOT_SCHEMA, {"at": 1, "count": 0, "color": "blue"})
    text = str(info.value)
    assert "at: expected a JSON object, got 1" in text
    assert "count: must be at least 1, got 0" in text
    assert 'color: expected one of "red", "green", got "blue"' in text


def test_ref_schemas_through_the_command(cache_env: dict[str, str]) -> None:
    proc = cli(SERVER, "tools", env=cache_env)
    assert 'color: "red"|"green", count: integer' in proc.stdout
    proc = cli(SERVER, "call", "plot", 'at={"x":1,"y":2}', "count=2", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"at": {"x": 1, "y": 2}, "count": 2}
    proc = cli(SERVER, "call", "plot", 'at={"x":1,"y":2}', "color=blue", env=cache_env)
    assert proc.returncode == 2 and "color: expected one of" in proc.stderr


def test_cyclic_and_dangling_refs_end() -> None:
    cyclic = {
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
        "properties": {"a": {"$ref": "#/$defs/A"}, "me": {"$ref": "#"}, "x": {"$ref": "#/no"}},
    }
    out = inline_refs(cyclic)
    assert out is not None
    assert out["properties"]["a"] == {}
    assert out["properties"]["x"] == {}
    assert argument_summary(cyclic) == "a: any, me: any, x: any"
    # A reference that doubles at each level stops at the budget.
    boom: dict[str, Any] = {"$defs": {"L0": {"type": "integer"}}}
    for i in range(1, 40):
        boom["$defs"][f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"}] * 2}
    boom["properties"] = {"p": {"$ref": "#/$defs/L39"}}
    assert len(json.dumps(inline_refs(boom))) < 2_000_000


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=20,
)
_refs = st.sampled_from(["#", "#/$defs/a", "#/$defs/b", "#/definitions/c", "#/properties/x", "x"])
_node = st.recursive(
    _json | st.builds(lambda r: {"$ref": r}, _refs),
    lambda inner: (
        st.dictionaries(
            st.sampled_from(["$ref", "type", "properties", "anyOf", "allOf", "x", "a", "b"]),
            inner | _refs,
            max_size=4,
        )
        | st.lists(inner, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "$defs": st.dictionaries(st.sampled_from(["a", "b"]), _node, max_size=2),
            "definitions": st.dictionaries(st.just("c"), _node, max_size=1),
            "properties": st.dictionaries(st.sampled_from(["x", "y"]), _node, max_size=2),
            "allOf": st.lists(_node, max_size=2),
        },
    )
)
def test_inline_refs_never_fails_on_any_schema(schema: dict[str, Any]) -> None:
    out = inline_refs(schema)
    json.dumps(out)  # plain JSON, finite
    argument_summary(schema)
    try:
        check_arguments("t", schema, parse_arguments(["x=1", "y=a"], schema))
    except UsageError:
        pass


# -- 3. unknown tool: status 1, as the server's own answer would be ----------------------


def test_unknown_tool_exits_1_like_a_server_error(cache_env: dict[str, str]) -> None:
    proc = cli("--json", SERVER, "call", "nope", env=cache_env)
    assert proc.returncode == 1
    error = envelope(proc)
    assert error["kind"] == "not_found" and "no tool named 'nope'" in error["message"]
    proc = cli(SERVER, "call", "nope", env=cache_env)
    assert proc.returncode == 1 and "no tool named 'nope'" in proc.stderr


def test_exit_status_table_in_the_docs_matches_the_code() -> None:
    from trio_mcp.cli import _connection as c

    text = (ROOT / "docs" / "cli.md").read_text()
    for status in (
        c.EXIT_OK,
        c.EXIT_TOOL_ERROR,
        c.EXIT_USAGE,
        c.EXIT_CONNECTION,
        c.EXIT_AUTH,
        c.EXIT_TIMEOUT,
        c.EXIT_PROTOCOL,
        c.EXIT_INTERRUPTED,
    ):
        assert f"\n| {status} |" in text
    assert "| 1 | `tool_error`, `server_error`, `not_found` |" in text


# -- 4. a whole arguments object from a file or stdin -------------------------------------


def test_arguments_object_from_a_file_and_stdin(tmp_path: Path, cache_env: dict[str, str]) -> None:
    args = tmp_path / "args.json"
    args.write_text('{"a": 2, "b": 40}')
    proc = cli("--json", SERVER, "call", "add", f"@{args}", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 42}
    # Later words win over the file; the file is checked like any other arguments.
    proc = cli("--json", SERVER, "call", "add", f"@{args}", "b=1", env=cache_env)
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 3}
    proc = cli("--json", SERVER, "call", "add", "@-", stdin='{"a": 1, "b": 2}', env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 3}
    proc = cli("--json", SERVER, "call", "add", "@-", stdin='{"a": "x", "b": 2}', env=cache_env)
    assert proc.returncode == 2 and "a: expected a number" in envelope(proc)["message"]


def test_arguments_file_errors_are_usage_errors(tmp_path: Path, cache_env: dict[str, str]) -> None:
    missing = tmp_path / "missing.json"
    proc = cli("--json", SERVER, "call", "add", f"@{missing}", env=cache_env)
    assert proc.returncode == 2
    assert envelope(proc)["message"] == (
        f"cannot read the arguments file '{missing}': No such file or directory"
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,')
    proc = cli("--json", SERVER, "call", "add", f"@{bad}", env=cache_env)
    assert proc.returncode == 2
    assert f"the arguments file '{bad}' is not valid JSON" in envelope(proc)["message"]
    bad.write_text("[1, 2]")
    proc = cli("--json", SERVER, "call", "add", f"@{bad}", env=cache_env)
    assert proc.returncode == 2 and "must hold a JSON object, not array" in proc.stderr
    proc = cli("--json", SERVER, "call", "add", "@-", stdin="nope", env=cache_env)
    assert proc.returncode == 2 and "the arguments on stdin is not valid JSON" in proc.stderr


# -- 5. --output FILE ----------------------------------------------------------------------


def test_output_file_holds_exactly_what_stdout_would(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    out = tmp_path / "result.json"
    plain = cli("--json", SERVER, "call", "add", "a=2", "b=3.5", env=cache_env)
    proc = cli("--json", SERVER, "call", "add", "a=2", "b=3.5", "--output", str(out), env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert out.read_text() == plain.stdout
    assert json.loads(out.read_text())["structuredContent"] == {"sum": 5.5}
    text = tmp_path / "tools.txt"
    proc = cli("--output", str(text), SERVER, "tools", env=cache_env)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "Add two numbers." in text.read_text() and "\x1b" not in text.read_text()
    # A tool error is a result too: written, status 1.
    proc = cli("--json", "--output", str(out), SERVER, "call", "fail", env=cache_env)
    assert proc.returncode == 1 and json.loads(out.read_text())["isError"] is True
    # Errors stay on stderr; an unwritable file is a usage error.
    proc = cli("--json", "--output", str(tmp_path / "no" / "dir.json"), SERVER, "ping")
    assert proc.returncode == 2 and "--output: cannot write" in envelope(proc)["message"]

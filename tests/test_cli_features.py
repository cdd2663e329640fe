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
    # An older version of the server took integers up to 9 and required "c": the cache
    # says so, the server no more.
    schemas["add"] = {
        "type": "object",
        "properties": {"a": {"type": "integer", "maximum": 9}, "b": {"type": "integer"}},
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    }
    cached.write_text(json.dumps(schemas))
    proc = cli("--json", SERVER, "call", "add", "a=20", "b=3.5", env=cache_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 23.5}
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
    proc = cli(SERVER, "prompt", "greeting", "@-", stdin='{"name": "Ada"}', env=cache_env)
    assert proc.returncode == 0 and "Please greet Ada." in proc.stdout
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


# -- 7. trio-mcp servers ------------------------------------------------------------------


def _project(tmp_path: Path, name: str = "demo", extra: list[str] | None = None) -> Path:
    """A project folder with a .mcp.json naming the CLI test server ``name``."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    server = {
        "command": sys.executable,
        "args": [str(SERVER_FILE), *(extra or [])],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {name: server}}))
    return project


@pytest.fixture
def home_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def test_servers_lists_each_name_with_its_file_and_kind(
    tmp_path: Path, home_env: dict[str, str]
) -> None:
    project = _project(tmp_path)
    (project / ".vscode").mkdir()
    (project / ".vscode" / "mcp.json").write_text(
        json.dumps(
            {
                "servers": {
                    "demo": {"url": "https://shadowed.example/mcp"},
                    "web\x1b]0;owned\x07": {"url": "https://example.com/mcp?k=${env:SECRET}"},
                }
            }
        )
    )
    user = Path(home_env["HOME"]) / ".cursor"
    user.mkdir()
    (user / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": {"command": "my-server"}}}))
    env = {**home_env, "SECRET": "s3cr3t"}
    proc = cli("--json", "servers", env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["servers"]
    by = [(r["name"], r["origin"], r["file"], r["shadowedBy"]) for r in rows]
    assert by == [
        ("demo", "project", str(project / ".mcp.json"), None),
        ("demo", "project", str(project / ".vscode" / "mcp.json"), str(project / ".mcp.json")),
        ("web\x1b]0;owned\x07", "project", str(project / ".vscode" / "mcp.json"), None),
        ("mine", "user", str(user / "mcp.json"), None),
    ]
    assert rows[0]["approved"] is False and "approved" not in rows[3]
    assert "s3cr3t" not in proc.stdout and "${env:SECRET}" in proc.stdout
    # For people: one line each, server text neutralised, nothing started.
    proc = cli("servers", env=env, cwd=project)
    assert proc.returncode == 0
    assert "\x1b" not in proc.stdout and "web\\x1b]0;owned\\x07" in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "TRANSPORT", "TARGET", "FROM"]
    assert "project: " + str(project / ".mcp.json") + " (asked before it runs)" in lines[1]
    # under a project entry, what approving it pins (the same lines the prompt shows)
    assert lines[2].strip() == "type = stdio" and lines[3].strip().startswith("command = ")
    assert lines[4].strip() == f"env PYTHONPATH = {ROOT}"
    assert "(shadowed by " + str(project / ".mcp.json") + ")" in lines[5]
    assert lines[-1].startswith("mine ") and "user: " in lines[-1]
    pins = json.loads(cli("--json", "servers", env=env, cwd=project).stdout)["servers"][0]["pins"]
    assert pins["env PYTHONPATH"] == str(ROOT) and pins["type"] == "stdio"
    # --config lists that file only; a broken file is reported with the usage status.
    proc = cli("--json", "servers", "--config", str(user / "mcp.json"), env=env)
    assert [r["origin"] for r in json.loads(proc.stdout)["servers"]] == ["--config"]
    (user / "mcp.json").write_text("{nope")
    proc = cli("servers", env=env, cwd=project)
    assert proc.returncode == 2 and str(user / "mcp.json") in proc.stderr


# -- 8. a project's config runs only with consent ------------------------------------------


def test_project_config_needs_consent_when_nobody_can_be_asked(
    tmp_path: Path, home_env: dict[str, str]
) -> None:
    project = _project(tmp_path)
    proc = cli("--json", "demo", "ping", env=home_env, cwd=project)
    assert proc.returncode == 2
    message = envelope(proc)["message"]
    assert message.startswith("the project config's server 'demo': not approved")
    assert "--yes" in message
    assert f"'demo' is a server of the project config {project / '.mcp.json'}" in proc.stderr
    # --yes runs it this time, with the notice, and remembers nothing.
    proc = cli("--json", "--yes", "demo", "ping", env=home_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "running it (--yes; not remembered)" in proc.stderr
    # what it pins is shown before it runs (and when it is refused): env values that
    # change what runs in full
    assert f"trio-mcp:   env PYTHONPATH = {ROOT}" in proc.stderr
    assert "trio-mcp:   command = " in proc.stderr
    assert cli("demo", "ping", env=home_env, cwd=project).returncode == 2
    # --config names the file: no question (you chose it).
    proc = cli("--config", str(project / ".mcp.json"), "demo", "ping", env=home_env)
    assert proc.returncode == 0, proc.stderr


def test_project_config_notice_names_the_command_on_path_it_hides(
    tmp_path: Path, home_env: dict[str, str]
) -> None:
    project = _project(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shadowed = bin_dir / "demo"
    shadowed.write_text("#!/bin/sh\nexit 0\n")
    shadowed.chmod(0o755)
    env = {**home_env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = cli("--yes", "demo", "ping", env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert f"(the command 'demo' on PATH is not run; give its path to run it: {shadowed})" in (
        proc.stderr
    )


def test_approved_project_entry_runs_until_it_changes(
    tmp_path: Path, home_env: dict[str, str]
) -> None:
    import trio

    from trio_mcp._config import consent_key, parse_config
    from trio_mcp.config import FileConsentStore

    project = _project(tmp_path)
    config = trio.run(
        lambda: parse_config(
            (project / ".mcp.json").read_bytes(), source=str(project / ".mcp.json")
        )
    )
    server = config.servers["demo"]
    FileConsentStore(tmp_path / "config" / "trio-mcp" / "consent.json").set(
        consent_key(server), server.fingerprint
    )
    proc = cli("demo", "ping", env=home_env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    _project(tmp_path, extra=["both"])  # the entry changed: asked again
    assert cli("demo", "ping", env=home_env, cwd=project).returncode == 2


# -- 6. shell completion --------------------------------------------------------------------


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """A ``trio-mcp`` on PATH that runs this checkout's command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "trio-mcp"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m trio_mcp.cli "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def bash_complete(line: str, env: dict[str, str], program: Path, cwd: Path = ROOT) -> list[str]:
    """Run the real bash script's completion function on ``line`` (cursor at the end)."""
    script = cli("completion", "bash").stdout
    driver = (
        script
        + '\nCOMP_LINE="$1"; COMP_POINT=${#COMP_LINE}\n'
        + 'read -ra COMP_WORDS <<< "$COMP_LINE"\n'
        + '[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")\n'
        + "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        + "_trio_mcp\n"
        + "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver, "bash", line],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"},
        cwd=cwd,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [word for word in proc.stdout.splitlines() if word]


def test_bash_completes_commands_options_and_words(
    tmp_path: Path, home_env: dict[str, str], program: Path
) -> None:
    project = _project(tmp_path)
    assert bash_complete("trio-mcp ", home_env, program, project) == [
        "demo",
        "auth",
        "servers",
        "completion",
    ]
    assert bash_complete("trio-mcp --js", home_env, program) == ["--json"]
    assert bash_complete("trio-mcp --log-level w", home_env, program) == ["warning"]
    assert bash_complete("trio-mcp completion ", home_env, program) == ["bash", "zsh", "fish"]
    assert bash_complete(f"trio-mcp '{SERVER}' pro", home_env, program) == ["prompts", "prompt"]
    # Completing a name from a project config runs nothing and asks nothing.
    assert bash_complete("trio-mcp demo call ", home_env, program, project) == []
    assert not (tmp_path / "config" / "trio-mcp" / "consent.json").exists()


def test_bash_completes_tool_names_from_the_cache_without_a_server(
    tmp_path: Path, home_env: dict[str, str], program: Path
) -> None:
    marker = tmp_path / "started"
    env = {**home_env, "TRIO_MCP_CLI_MARKER": str(marker)}
    target = f"'{SERVER}' --inherit-env"
    # No cache yet: nothing offered, and no server started to find out.
    assert bash_complete(f"trio-mcp {target} call ", env, program) == []
    assert not marker.exists()
    assert cli(SERVER, "--inherit-env", "tools", env=env).returncode == 0
    assert marker.read_text().count("\n") == 1
    assert bash_complete(f"trio-mcp {target} call sl", env, program) == ["slow"]
    assert bash_complete(f"trio-mcp {target} call slow s", env, program) == [
        "seconds=",
        "steps=",
    ]
    assert bash_complete(f"trio-mcp {target} call slow seconds=1 s", env, program) == ["steps="]
    assert marker.read_text().count("\n") == 1  # completing started no server
    # Hostile names in the cache: quoted for the shell, or not offered at all.
    (cached,) = (tmp_path / "cache" / "trio-mcp" / "tools").glob("*.json")
    cached.write_text(
        json.dumps(
            {
                "x$(touch pwned)": {},
                "x y": {},
                "x\x1b]0;owned\x07": {},
                "x\nrm": {},
                "x\ttab": {},
                "-x": {},
                "x" * 300: {},
            }
        )
    )
    words = bash_complete(f"trio-mcp {target} call x", env, program)
    assert words == ["'x y'", "'x$(touch pwned)'"]
    assert not (ROOT / "pwned").exists()


def test_completion_scripts_for_each_shell(program: Path) -> None:
    for shell, marks in {
        "bash": ["complete -o default -F _trio_mcp trio-mcp", "__complete bash"],
        "zsh": ["#compdef trio-mcp", "compadd", "__complete zsh"],
        "fish": ["complete -c trio-mcp", "__complete fish"],
    }.items():
        proc = cli("completion", shell)
        assert proc.returncode == 0
        for mark in marks:
            assert mark in proc.stdout
    proc = cli("completion", "powershell")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    check = subprocess.run(["bash", "-n"], input=cli("completion", "bash").stdout, text=True)
    assert check.returncode == 0
    fish_like = cli("__complete", "fish", f"trio-mcp '{SERVER}' c", "c")
    assert fish_like.stdout == "call\n"


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40), st.sampled_from(["", "x", "'x", "a=", "http:"]))
def test_a_name_offered_to_bash_is_one_quoted_word_and_inert(name: str, typed: str) -> None:
    import shlex

    from trio_mcp.cli._completion import for_bash, safe_name

    offered = [name] if safe_name(name) else []
    for word in for_bash(offered, typed, typed):
        assert shlex.split(word) == [name]  # exactly the name, one word: nothing runs
        assert all(ch >= " " and ch != "\x7f" for ch in word)
    if not safe_name(name):
        assert (
            name == ""
            or name.startswith("-")
            or len(name) > 256
            or any(
                ch < " "
                or "\x7f" <= ch <= "\x9f"
                or ch in "\u2028\u2029\u202e\u200e\u200f"
                or "\u202a" <= ch <= "\u202e"
                or "\u2066" <= ch <= "\u2069"
                or ch == "\u061c"
                or "\ud800" <= ch <= "\udfff"
                for ch in name
            )
        )

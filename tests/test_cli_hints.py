"""trio-mcp's errors say what to do next (issue 36): did-you-mean for tools, commands, argument
and server names; every bad argument at once; form errors that name the field's label."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trio_mcp.cli._app import unknown_tool
from trio_mcp.cli._args import UsageError, close_matches, did_you_mean, read_arguments
from trio_mcp.cli._interact import _as_labels, _choices, _labelled

ROOT = Path(__file__).resolve().parent.parent

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "number"},
        "b": {"type": "number"},
        "mode": {"enum": ["fast", "slow"]},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}


def test_close_matches() -> None:
    tools = ["get-sum", "get-env", "echo", "toggle-simulated-logging"]
    assert close_matches("get-sun", tools)[0] == "get-sum"
    assert close_matches("ECHO", tools) == ["echo"]  # a different case
    assert close_matches("toggle", tools) == ["toggle-simulated-logging"]  # a prefix
    assert close_matches("zzz", tools) == []
    assert did_you_mean("ehco", tools) == " (did you mean 'echo'?)"
    assert did_you_mean("zzz", tools) == ""


def test_unknown_tool_names_the_likely_one_first() -> None:
    text = unknown_tool("get-sun", ["echo", "get-sum"])
    assert text == (
        "the server has no tool named 'get-sun' (did you mean 'get-sum'?); its tools: echo, get-sum"
    )


def test_every_bad_argument_is_reported_at_once() -> None:
    with pytest.raises(UsageError) as info:
        read_arguments("add", ["a=x", "b=y", "mdoe=fast", "oops"], SCHEMA)
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid arguments for 'add':"
    assert "  argument 'a': expected a number, got 'x'" in lines
    assert "  argument 'b': expected a number, got 'y'" in lines
    assert any("argument 'oops': use key=value" in line for line in lines)
    assert any(line.startswith("  mdoe: unknown argument (did you mean 'mode'?)") for line in lines)
    assert not any("required" in line for line in lines)  # a and b were given (badly)


def test_one_bad_word_keeps_its_own_message() -> None:
    with pytest.raises(UsageError, match=r"^argument 'a': expected a number, got 'x'$"):
        read_arguments("add", ["a=x", "b=1"], SCHEMA)
    with pytest.raises(UsageError, match=r"b: required \(a number\)"):
        read_arguments("add", ["a=1"], SCHEMA)
    assert read_arguments("add", ["a=x", "a=1", "b=2"], SCHEMA) == {"a": 1, "b": 2}  # last wins


def test_form_problems_name_the_label() -> None:
    props = {"age": {"type": "integer", "title": "Your age"}, "x": {"type": "string"}}
    assert _labelled("age: must be at most 100", props) == "Your age: must be at most 100"
    assert _labelled("x: required", props) == "x: required"  # no title: the name
    assert _labelled("something else", props) == "something else"


def test_titled_choices_show_their_title_as_the_default() -> None:
    spec = {"oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2"}]}
    values, labels = _choices(spec)
    assert labels == ["Superman", "hero-2"]
    assert _as_labels("hero-1", values, labels) == "Superman"
    assert _as_labels(["hero-2", "hero-1"], values, labels) == ["hero-2", "Superman"]
    assert _as_labels("other", values, labels) == "other"
    assert _as_labels(True, [1, True], ["one", "yes"]) == "yes"  # True is not 1 here


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdin=subprocess.DEVNULL,
        timeout=60,
        cwd=cwd,
    )


def test_a_misspelt_server_name_from_a_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    config = home / ".cursor" / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"my-server": {"command": "true"}}}))
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = cli("my-servr", "tools", env=env, cwd=tmp_path)
    assert proc.returncode == 3  # a server that cannot be started, as before
    assert "no server named 'my-servr' (did you mean 'my-server'?)" in proc.stderr
    assert str(config) in proc.stderr and ".mcp.json" in proc.stderr  # the files searched
    proc = cli("--config", str(config), "my-servr", "tools", env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "did you mean 'my-server'?" in proc.stderr


class _Out:
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str, style: str | None = None) -> None:
        self.notes.append(text)


class _App:
    def __init__(self) -> None:
        self.out = _Out()


def test_list_changed_notices_one_per_burst_and_none_before_the_banner() -> None:
    from trio_mcp.cli._repl import Repl

    app = _App()
    repl = Repl(app, object())  # type: ignore[arg-type]  # (only .out is used here)
    for _ in range(4):  # server-everything sends four while it starts
        repl._on_list_changed("tools")
    assert app.out.notes == []
    assert repl.stale == {"tools"}  # listed again, quietly, before the banner
    repl.stale.clear()
    repl.ready = True
    for _ in range(3):
        repl._on_list_changed("tools")
    repl._on_list_changed("prompts")
    assert app.out.notes == [
        "[server] the tools list changed",
        "[server] the prompts list changed",
    ]


def test_shell_completion_offers_full_after_a_list_command() -> None:
    from trio_mcp.cli._completion import complete

    assert complete(["srv", "tools"], "--f") == ["--full"]
    assert complete(["srv", "resources"], "--fu") == ["--full"]
    assert complete(["srv", "call"], "--f") == []  # call takes no --full

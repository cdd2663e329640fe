"""trio-mcp in an 80-column pseudo-terminal (issue 36): whole identifiers, help and lists that
fit, did-you-mean suggestions, a spinner that moves; against the bundled demo server and
server-everything."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
pytest.importorskip("rich")

from rich.cells import cell_len  # noqa: E402

from .interop_peers import everything_argv, skip_unless_peers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO = f"{sys.executable} -m trio_mcp.testing"
SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")  # rich's "dots" spinner
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "COLUMNS": "80",
        "LINES": "24",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "trio_mcp.cli", *args],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 80),
    )


def screen_lines(raw: str) -> list[str]:
    """What the terminal shows, line by line: escapes removed, a carriage return rewrites."""
    out: list[str] = []
    for line in _ANSI.sub("", raw).replace("\r\n", "\n").split("\n"):
        out.append(line.split("\r")[-1])
    return out


def run80(env: dict[str, str], *args: str) -> tuple[int, list[str]]:
    child = spawn(env, *args)
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, screen_lines(child.before)


def names_of(env: dict[str, str], target: str, command: str, key: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", "--json", target, command],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return [item[key] for item in json.loads(proc.stdout)]


def joined(lines: list[str]) -> str:
    """The lines as one text, a wrapped line joined back."""
    return " ".join(" ".join(lines).split())


def assert_fits(lines: list[str], width: int = 80) -> None:
    wide = [line for line in lines if cell_len(line) > width]
    assert not wide, wide


def assert_whole(identifiers: list[str], lines: list[str]) -> None:
    """Each identifier starts a line of its own block, whole."""
    assert identifiers
    for name in identifiers:
        assert any(line == name or line.startswith(name + "  ") for line in lines), name


def test_tools_at_80_columns_keep_names_whole(env: dict[str, str]) -> None:
    status, lines = run80(env, DEMO, "tools")
    assert status == 0
    assert_fits(lines)
    assert_whole(names_of(env, DEMO, "tools", "name"), lines)
    assert "slow  seconds: number = 1.0, steps: integer = 4" in lines


def test_help_fits_80_columns_with_examples(env: dict[str, str]) -> None:
    for args in (
        ["--help"],
        ["x", "call", "--help"],
        ["x", "tools", "--help"],
        ["auth", "--help"],
        ["completion", "--help"],
    ):
        status, lines = run80(env, *args)
        assert status == 0
        assert_fits(lines)
        assert any(line.startswith("usage: trio-mcp") for line in lines)
        assert not any(line.endswith("trio-") for line in lines)  # no word split at a hyphen
    status, lines = run80(env, "--help")
    assert "examples:" in lines
    assert any("call add a=2 b=3.5" in line for line in lines)
    status, lines = run80(env, "x", "call", "--help")
    assert any(line.strip().startswith("NAME") and "the tool's name" in line for line in lines)
    assert "examples:" in lines


def test_did_you_mean(env: dict[str, str]) -> None:
    status, lines = run80(env, DEMO, "call", "ehco", "text=hi")
    assert status == 1
    assert "did you mean 'echo'?" in joined(lines)
    status, lines = run80(env, DEMO, "prompt", "greting", "name=Ada")
    assert status == 1
    assert "no prompt named 'greting' (did you mean 'greeting'?)" in joined(lines)
    status, lines = run80(env, DEMO, "tols")
    assert status == 2
    assert_fits(lines)
    assert any(line.strip().startswith("the commands: call, info,") for line in lines)
    assert "unknown command 'tols' (did you mean 'tools'?)" in joined(lines)
    status, lines = run80(env, DEMO, "call")
    assert status == 2
    text = joined(lines)
    assert "call needs a tool name" in text and "required" not in text


def test_every_bad_argument_at_once(env: dict[str, str]) -> None:
    status, lines = run80(env, DEMO, "call", "add", "a=x", "b=y")
    assert status == 2
    text = "\n".join(lines)
    assert "argument 'a': expected a number, got 'x'" in text
    assert "argument 'b': expected a number, got 'y'" in text


def test_a_spinner_moves_from_the_start_of_a_call(env: dict[str, str]) -> None:
    # One step of 3 s: its only progress notification comes at the end, so whatever
    # moves before the first "%" moved with no progress reported.
    child = spawn(env, DEMO, "call", "slow", "seconds=3", "steps=1")
    seen = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            seen += child.read_nonblocking(4096, timeout=0.2)
        except pexpect.TIMEOUT:
            continue
        except pexpect.EOF:
            break
    before_progress = seen.split("%")[0]
    frames = SPINNER & set(before_progress)
    assert len(frames) >= 3, seen  # it moved
    assert "slow" in _ANSI.sub("", before_progress)  # the tool's name
    assert "0:00:01" in before_progress  # and the time elapsed, counting
    child.close()
    assert child.exitstatus == 0


def test_no_spinner_when_piped_or_json(env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", "--json", DEMO, "call", "slow", "seconds=0.6"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0
    assert not SPINNER & set(proc.stderr + proc.stdout)
    child = spawn(env, "--json", DEMO, "call", "slow", "seconds=0.8", "steps=1")
    child.expect(pexpect.EOF)
    assert not SPINNER & set(child.before)


# -- server-everything ----------------------------------------------------------------------


@pytest.fixture
def everything() -> str:
    skip_unless_peers()
    return shlex.join(everything_argv("stdio"))


@pytest.mark.interop
def test_everything_lists_at_80_columns(env: dict[str, str], everything: str) -> None:
    for command, key in (("tools", "name"), ("resources", "uri"), ("templates", "uriTemplate")):
        status, lines = run80(env, everything, command)
        assert status == 0
        assert_fits(lines)
        assert_whole(names_of(env, everything, command, key), lines)
    status, lines = run80(env, everything, "tools")
    assert "toggle-simulated-logging" in lines  # was split "...loggin|g" by the old table
    assert len([line for line in lines if line.strip()]) < 60  # the old table: 89 lines
    status, full = run80(env, everything, "tools", "--full")
    assert_fits(full)
    assert len(full) > len(lines)


@pytest.mark.interop
def test_everything_misspelt_tool(env: dict[str, str], everything: str) -> None:
    status, lines = run80(env, everything, "call", "get-sun", "a=1", "b=2")
    assert status == 1
    assert "did you mean 'get-sum'" in joined(lines)


@pytest.mark.interop
def test_everything_banner_fits_and_no_repeated_notices(
    env: dict[str, str], everything: str
) -> None:
    child = spawn(env, everything)
    child.expect("mcp>")
    lines = screen_lines(child.before)
    assert_fits(lines)
    assert not any("list changed" in line for line in lines), lines
    assert any(line.startswith("connected to mcp-servers/everything") for line in lines)
    child.send("call get-s")
    child.expect("Returns the sum of two numbers")  # a tool's description by its name
    child.send("um ")
    child.expect(r"number\*")  # and the types of its arguments
    child.sendcontrol("u")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

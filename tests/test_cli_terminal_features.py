"""The trio-mcp command's daily-tool features in a real pseudo-terminal (pexpect): TAB
completion in an interactive bash, the consent question for a project's config, and the
interactive mode re-listing a changed tool before refusing its arguments."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
SERVER_FILE = ROOT / "tests" / "servers" / "cli_features_server.py"
SERVER = f"{sys.executable} {SERVER_FILE}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "trio-mcp"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m trio_mcp.cli "$@"\n')
    wrapper.chmod(0o755)
    return {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def spawn(env: dict[str, str], *args: str, cwd: Path = ROOT) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "trio_mcp.cli", *args],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    status: int = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return status


def test_tab_completes_in_a_real_bash(env: dict[str, str], tmp_path: Path) -> None:
    _list_tools(env)
    shell = pexpect.spawn(
        "bash",
        ["--norc", "--noprofile", "-i"],
        cwd=str(tmp_path),
        env={**env, "PS1": "READY$ ", "TERM": "dumb"},
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    shell.expect_exact("READY$ ")
    shell.sendline('eval "$(trio-mcp completion bash)"')
    shell.expect_exact("READY$ ")
    shell.send(f"trio-mcp '{SERVER}' ca\t")
    shell.expect_exact("call ")
    shell.send("sl\t")
    shell.expect_exact("slow ")
    shell.send("st\t")
    shell.expect_exact("steps=")
    shell.send("1 --js\t")
    shell.expect_exact("--json ")
    shell.sendline("")
    shell.expect_exact('"text": "slept 1.0 seconds"')
    shell.expect_exact("READY$ ")
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def _list_tools(env: dict[str, str]) -> None:
    listed = subprocess.run(["trio-mcp", SERVER, "tools"], env=env, capture_output=True, timeout=60)
    assert listed.returncode == 0  # the schema cache now knows the tools


def _complete_slow_call(shell: pexpect.spawn) -> None:
    """Type a call with TAB at each step; run it (escape codes between the letters allowed)."""
    shell.send(f"trio-mcp '{SERVER}' call sl\t")
    shell.expect_exact("call slow")
    shell.send("st\t")
    shell.expect_exact("eps=")
    shell.send("1 --js\t")
    shell.expect_exact("--json")
    shell.sendline("")
    shell.expect_exact('"text": "slept 1.0 seconds"')


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_tab_completes_in_a_real_zsh(env: dict[str, str], tmp_path: Path) -> None:
    _list_tools(env)
    shell = pexpect.spawn(
        "zsh",
        ["-f", "-i"],
        cwd=str(tmp_path),
        env={**env, "TERM": "xterm"},
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    shell.sendline("PS1='READY$ '; autoload -U compinit; compinit -u")
    shell.expect_exact("READY$ ")
    shell.sendline('eval "$(trio-mcp completion zsh)"')
    shell.expect_exact("READY$ ")
    _complete_slow_call(shell)
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_tab_completes_in_a_real_fish(env: dict[str, str], tmp_path: Path) -> None:
    _list_tools(env)
    shell = pexpect.spawn(
        "fish",
        ["--no-config", "-i"],
        cwd=str(tmp_path),
        env={**env, "TERM": "xterm"},
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    shell.sendline("function fish_prompt; echo -n 'READY> '; end")
    shell.expect_exact("READY> ")
    shell.sendline("trio-mcp completion fish | source")
    shell.expect_exact("READY> ")
    _complete_slow_call(shell)
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    entry = {
        "command": sys.executable,
        "args": [str(SERVER_FILE)],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": entry}}))
    return project


def test_project_config_asks_on_a_terminal_and_remembers(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = _project(tmp_path)
    child = spawn(env, "demo", "ping", cwd=project)
    child.expect_exact(f"'demo' is a server of the project config {project / '.mcp.json'}")
    child.expect_exact("not approved yet. Run it? [y/N]")
    child.sendline("n")
    assert finish(child) == 2
    assert "declined" in child.before
    child = spawn(env, "demo", "ping", cwd=project)
    child.expect_exact("Run it? [y/N]")
    child.sendline("y")
    child.expect_exact("pong")
    assert finish(child) == 0
    # Approved: a run without a terminal goes on (the notice still says where it came from).
    proc = subprocess.run(
        ["trio-mcp", "demo", "ping"],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "is a server of the project config" in proc.stderr


def test_repl_relists_a_changed_tool_before_refusing(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendline("tools")
    child.expect("Greets someone")
    child.expect("mcp>")
    child.sendline("call upgrade")  # greet now takes a string; nobody was told
    child.expect("upgraded")
    child.expect("mcp>")
    child.sendline("call greet who=Ada")
    child.expect("hello Ada")
    child.expect("mcp>")
    child.sendline("call greet")
    child.expect(r"who: required \(a string\)")
    child.expect("mcp>")
    child.sendline("exit")
    assert finish(child) == 0

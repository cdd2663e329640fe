"""The trio-mcp command in a pseudo-terminal (pexpect): the interactive mode, progress bars,
Ctrl-C, and answering elicitation and sampling requests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
SERVER = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'cli_server.py'}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "trio_mcp.cli", *args],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    status: int = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return status


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie not yet reaped by init counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] == "Z"


def test_progress_and_ctrl_c_cancel_tells_the_server_and_ends_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    env = {**env, "TRIO_MCP_CLI_MARKER": str(marker)}
    child = spawn(env, "-v", "--inherit-env", SERVER, "call", "slow", "seconds=20", "steps=20")
    child.expect("slow: step 1 of 20")  # the progress bar's text
    child.expect("━")  # the bar itself
    child.sendintr()
    child.expect("cancelling")
    child.expect('"notifications/cancelled"')  # -v shows the server being told
    assert finish(child) == 130
    assert "interrupted" in child.before
    assert gone(int(marker.read_text().split()[0]))


def test_second_ctrl_c_exits(env: dict[str, str], tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    env = {**env, "TRIO_MCP_CLI_MARKER": str(marker)}
    child = spawn(env, "--inherit-env", SERVER)
    child.expect("mcp>")
    child.sendline("call slow seconds=20 steps=20")
    child.expect("step 1 of 20")
    child.sendintr()  # cancels the call
    child.expect("cancelled")
    child.expect("mcp>")
    child.sendintr()  # the second one leaves
    assert finish(child) == 0
    assert gone(int(marker.read_text().split()[0]))


def test_ctrl_c_at_the_prompt_asks_once(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendintr()
    child.expect("Ctrl-D to leave")
    child.sendintr()
    assert finish(child) == 0


def test_repl_completion_history_and_commands(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("connected to trio-mcp-demo")
    child.expect("mcp>")
    child.send("too")
    child.expect("tools")  # the completion menu offers the command
    child.sendline("ls")
    child.expect("Echo the text back")
    child.expect("mcp>")
    child.send("call ec")
    child.expect("echo")
    child.send("\t")
    child.send(" te")
    child.expect("text=")  # argument names come from the tool's schema
    child.send("\t")
    child.sendline("hello")
    child.expect("hello")
    child.expect("mcp>")
    child.sendline("call add a=2 b=40")
    child.expect("42")
    child.expect("mcp>")
    child.sendline("read demo://readme")
    child.expect("This is the trio_mcp demo server.")
    child.expect("mcp>")
    child.sendline("call add a=x b=1")
    child.expect("expected a number, got 'x'")
    child.expect("mcp>")
    child.send("\x1b[A")  # history: the last line comes back
    child.expect("call add a=x b=1")
    child.send("\x15")  # clear the line
    child.sendline("exit")
    assert finish(child) == 0
    history = Path(env["XDG_STATE_HOME"]) / "trio-mcp" / "history"
    assert "read demo://readme" in history.read_text()


def test_elicitation_form_with_choices_validation_and_defaults(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendline("call order")
    child.expect("asks: Your order")
    child.expect("answer\\?")
    child.sendline("")
    child.expect("1\\) small")
    child.expect("2\\) large")
    child.expect("Size\\*")
    child.sendline("3")
    child.expect("choose a number from 1 to 2")
    child.sendline("2")
    child.expect("Count\\*")
    child.sendline("9")
    child.expect("Count: must be at most 5")  # the field's label, not its key (issue 36)
    child.sendline("3")
    child.expect("Note")
    child.sendline("")  # keeps the default shown
    child.expect("order: 3 x large \\(none\\)")
    child.expect("mcp>")
    child.sendline("call order")
    child.expect("answer\\?")
    child.sendline("n")
    child.expect("action: decline")
    child.sendline("exit")
    assert finish(child) == 0


def test_url_elicitation_shows_the_domain_and_asks(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendline("call visit url=https://xn--pypl-53dc.com/login")
    child.expect("asks you to open a URL")
    child.expect("domain: ")
    child.expect("warning")
    child.expect("Open it in your browser")
    child.sendline("n")  # nothing is opened
    child.expect("action: decline")
    child.expect("mcp>")
    child.sendline("call visit url=http://127.0.0.1/x")
    child.expect("blocked")
    child.expect("action: decline")
    child.sendline("exit")
    assert finish(child) == 0


def test_sampling_reply_typed_by_the_user(env: dict[str, str]) -> None:
    child = spawn(env, SERVER, "call", "ask_model", "question=Capital of France?")
    child.expect("asks for a model reply")
    child.expect("user: Capital of France\\?")
    child.expect("reply")
    child.sendline("Paris")
    child.expect("model said: Paris")
    assert finish(child) == 0


def test_tables_on_a_terminal(env: dict[str, str]) -> None:
    child = spawn(env, SERVER, "tools")
    child.expect(r"Tools \(\d+\)")  # one block per tool (issue 36), no table
    child.expect("seconds")  # the argument's name, styled apart
    child.expect(": number = 1.0")
    assert finish(child) == 0

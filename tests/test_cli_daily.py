"""The trio-mcp command's daily-use bugs (issues 26 and 28): elicitation forms against
``--timeout`` and cancelled prompts (the terminal given back), multi-select defaults,
Ctrl-C while connecting, prompt arguments sent as typed, the interactive mode after the
server died (``reconnect``), errors said once, and a closed output pipe.

The interactive items run in a real pseudo-terminal (pexpect), the others as subprocesses.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from .interop_peers import everything_argv, everything_env, skip_unless_peers

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
SERVER = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'hostile_server.py'}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def spawn(env: dict[str, str], *args: str, timeout: float = 30) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "trio_mcp.cli", *args],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        timeout=timeout,
        dimensions=(40, 1000),  # no line of the hostile server wraps
    )


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    status: int = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return status


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        timeout=60,
    )


# -- 2. elicitation forms vs --timeout, cancelled prompts --------------------------------


@pytest.mark.parametrize("protocol", ["auto", "legacy"])  # an input_required round; a request
def test_time_spent_answering_a_form_does_not_count_against_timeout(
    env: dict[str, str], protocol: str
) -> None:
    child = spawn(env, "--protocol", protocol, "--timeout", "2", SERVER, "call", "ask")
    child.expect("answer\\?")
    time.sleep(3.5)  # a person reads the question: longer than --timeout
    child.sendline("")
    child.expect("\\(a string\\):")
    time.sleep(1.0)
    child.sendline("Ada")
    child.expect("\\[Enter: default")
    child.sendline("")  # keeps the default
    child.expect('action: accept \\{"name": "Ada", "extra": ')
    assert finish(child) == 0


def test_request_still_times_out_when_nobody_is_asked(env: dict[str, str]) -> None:
    proc = run(env, "--json", "--timeout", "1", SERVER, "call", "progress", "steps=20")
    assert proc.returncode == 5, proc.stderr
    error = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    assert error["kind"] == "timeout" and "--timeout 1" in error["message"]


def _terminal_is_sane(child: pexpect.spawn) -> bool:
    lflag = termios.tcgetattr(child.child_fd)[3]
    wanted = termios.ICANON | termios.ECHO | termios.ISIG
    return bool(lflag & wanted == wanted)


def test_a_withdrawn_question_gives_the_terminal_back(env: dict[str, str]) -> None:
    # The server withdraws its question (notifications/cancelled) while the form is shown:
    # the prompt ends, the terminal is back in its normal mode when the command exits.
    child = spawn(env, "--protocol", "legacy", SERVER, "call", "impatient", "seconds=1.5")
    child.expect("Quick, your name\\?")
    child.expect("answer\\?")
    child.send("half-typ")  # the person is typing when the question is withdrawn
    child.expect("gave up")
    child.expect(pexpect.EOF)
    assert _terminal_is_sane(child)
    child.close()
    assert child.exitstatus == 0


def test_a_withdrawn_question_leaves_nothing_reading_stdin(env: dict[str, str]) -> None:
    child = spawn(env, "--protocol", "legacy", SERVER)
    child.expect("mcp>")
    child.sendline("call impatient seconds=1.5")
    child.expect("answer\\?")
    child.send("half-typ")
    child.expect("gave up")
    child.expect("mcp>")
    # The next command goes to the interactive prompt, not to the abandoned question.
    child.sendline("call result")
    child.expect("result <")
    child.expect("mcp>")
    child.sendline("exit")
    assert finish(child) == 0


def test_a_question_while_idle_takes_the_terminal_from_the_prompt(env: dict[str, str]) -> None:
    # A handshake-era server asks while no request runs: the mcp> prompt steps aside, the
    # question alone reads the terminal, then the prompt comes back.
    child = spawn(env, "--protocol", "legacy", SERVER)
    child.expect("mcp>")
    child.sendline("call later seconds=1")
    child.expect("will ask")
    child.expect("mcp>")
    child.expect("A question out of the blue\\?")
    child.expect("answer\\?")
    child.sendline("y")
    child.expect("Word \\(a string\\):")
    child.sendline("hello")
    child.expect("mcp>")
    child.sendline("call answers_so_far")
    child.expect('"word": "hello"')
    child.expect("mcp>")
    child.sendline("exit")
    assert finish(child) == 0


# -- 3. multi-select defaults ---------------------------------------------------------------


def test_multi_select_accepts_its_default_and_numbers(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendline("call instruments")
    child.expect("answer\\?")
    child.sendline("")
    child.expect("1\\) Guitar")
    child.expect("3\\) Drums")
    child.expect("Instruments \\(numbers or values, separated by commas\\): ")
    child.expect("Guitar")  # the default, pre-filled
    child.sendline("")  # Enter keeps it
    child.expect('action: accept \\{"picked": \\["Guitar"\\]\\}')
    child.expect("mcp>")
    child.sendline("call instruments")
    child.expect("answer\\?")
    child.sendline("")
    child.expect("Instruments")
    child.send("\x15")  # clear the pre-filled default
    child.sendline("2, Drums")
    child.expect('action: accept \\{"picked": \\["Piano", "Drums"\\]\\}')
    child.expect("mcp>")
    child.sendline("exit")
    assert finish(child) == 0


@pytest.mark.interop
def test_server_everything_form_defaults_all_accepted(env: dict[str, str]) -> None:
    # The reference server's form: Enter keeps every default, the multi-selects included
    # (["Guitar"] untitled, ["fish-1"] titled anyOf); the server reports what it got.
    skip_unless_peers()
    target = shlex.join(everything_argv("stdio"))
    extra = [f"--env={k}={v}" for k, v in everything_env().items() if k != "PATH"]
    child = spawn(env, *extra, target, "call", "trigger-elicitation-request", timeout=60)
    child.expect("answer\\?")
    child.sendline("")
    child.expect("String\\* \\(a string\\):")
    child.sendline("Ada")
    for title in [
        "Boolean",
        "String with default",
        "String with email format",
        "String with uri format",
        "String with date format",
        "Integer",
        "Number in range 1-1000",
        "Untitled Single Select Enum",
        "Untitled Multiple Select Enum",
        "Titled Single Select Enum",
        "Titled Multiple Select Enum",
        "Legacy Titled Single Select Enum",
    ]:
        child.expect(title + "[^\r\n]*:")
        child.sendline("")
    child.expect("User provided the requested information")
    child.expect(pexpect.EOF)
    raw = json.loads(child.before[child.before.index("{") :])
    assert raw["content"]["untitledMultipleSelectEnum"] == ["Guitar"]
    assert raw["content"]["titledMultipleSelectEnum"] == ["fish-1"]
    assert raw["content"]["name"] == "Ada"


# -- 4. Ctrl-C while connecting --------------------------------------------------------------


def _wait_for_server_process(pid: int, name: str, limit: float = 60.0) -> None:
    """Wait until process ``pid`` has a child called ``name`` (the server it is connecting to)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            if parent == pid and comm == name:
                time.sleep(0.2)  # the CLI waits for the handshake now
                return
        time.sleep(0.05)
    raise AssertionError(f"no {name!r} child of {pid} after {limit} s")


@pytest.mark.parametrize("command", [["tools"], []])
def test_first_ctrl_c_while_connecting_exits_130(env: dict[str, str], command: list[str]) -> None:
    # A server that never answers the handshake; no --timeout.
    child = spawn(env, "--timeout", "0", "sleep 60", *command, timeout=10)
    _wait_for_server_process(child.pid, "sleep")  # the CLI is connecting now
    child.sendintr()
    assert finish(child) == 130
    assert "interrupted" in child.before
    assert "Ctrl-C again" not in child.before


# -- 5. prompt arguments as typed -------------------------------------------------------------


def test_prompt_arguments_are_sent_exactly_as_typed(env: dict[str, str]) -> None:
    words = ["price=1.50", 'quote="quoted"', "raw=@not-a-file", "empty="]
    proc = run(env, "--json", SERVER, "prompt", "echo_args", *words)
    assert proc.returncode == 0, proc.stderr
    text = json.loads(proc.stdout)["messages"][0]["content"]["text"]
    assert json.loads(text) == {
        "price": "1.50",
        "quote": '"quoted"',
        "raw": "@not-a-file",
        "empty": "",
    }
    proc = run(env, "--json", SERVER, "prompt", "echo_args", '{"price": "007"}')
    assert json.loads(json.loads(proc.stdout)["messages"][0]["content"]["text"]) == {"price": "007"}
    proc = run(env, "--json", SERVER, "prompt", "echo_args", '{"price": 1.50}')
    assert proc.returncode == 2
    assert "prompt arguments are strings" in proc.stderr


# -- 6. after the server died; errors said once -------------------------------------------------


def test_after_the_server_died_reconnect_or_leave_with_3(env: dict[str, str]) -> None:
    child = spawn(env, SERVER)
    child.expect("mcp>")
    child.sendline("call crash")
    child.expect("the connection is gone: type 'reconnect'")
    said = child.before
    child.expect("mcp>")
    assert said.count("dying <") == 1, said  # the server's stderr, once
    child.sendline("call result")
    child.expect("not connected: type 'reconnect'")
    child.expect("mcp>")
    child.sendline("reconnect")
    child.expect("connected to evil")
    child.expect("mcp>")
    child.sendline("call result")
    child.expect("result <")
    child.expect("mcp>")
    child.sendline("call broken")
    child.expect("trio-mcp: [^\r\n]*server error -32603")
    assert "server error: server error" not in child.after
    child.expect("mcp>")
    child.sendline("call crash")
    child.expect("the connection is gone")
    child.expect("mcp>")
    child.sendline("exit")
    assert finish(child) == 3


def test_errors_say_their_kind_once(env: dict[str, str]) -> None:
    proc = run(env, SERVER, "call", "broken")
    assert proc.returncode == 1
    assert "server error -32603" in proc.stderr
    assert "server error: server error" not in proc.stderr
    proc = run(env, SERVER, "call", "crash")
    assert proc.returncode == 3
    assert proc.stderr.count("dying <") == 1, proc.stderr
    proc = run(env, "-v", SERVER, "call", "crash")  # -v shows each stderr line as it comes
    assert proc.returncode == 3
    assert proc.stderr.count("dying <") == 1, proc.stderr
    assert "(its stderr is above)" in proc.stderr


# -- 7. a closed output pipe -------------------------------------------------------------------


@pytest.mark.parametrize("json_mode", [False, True])
def test_closed_stdout_ends_quietly(env: dict[str, str], json_mode: bool) -> None:
    # `trio-mcp ... tools | head -0`: the reader is gone before we write.
    args = [sys.executable, "-m", "trio_mcp.cli", *(["--json"] if json_mode else []), SERVER]
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = subprocess.run(
            [*args, "tools"],
            stdout=writer,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
            timeout=60,
            text=True,
        )
    finally:
        os.close(writer)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""

"""Server text on the terminal: every string a server controls reaches the user's terminal
neutralised (``trio_mcp.for_terminal``) and never parsed as rich markup, in every command,
in a real pseudo-terminal; ``--json`` output stays exact.

The server (``tests/servers/hostile_server.py``) puts ``EVIL`` (OSC 52 clipboard write,
OSC 8 hyperlink, screen clear, window title, U+202E, NUL, C1 CSI, ``[/]`` and
``[link=...]`` markup) in its name, instructions, tool names, descriptions, results, errors,
prompts, resources, stderr, elicitation messages and progress messages.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .servers.hostile_server import EVIL

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
SERVER = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'hostile_server.py'}"

#: The raw pieces of EVIL a terminal would act on: none may ever reach it.
RAW = [
    b"\x1b]52;c;cm0gLXJmIH4=",
    b"\x1b]8;;https://evil.example/",
    b"\x1b[2J\x1b]0;pwned",
    "\u202eevil".encode(),
    b"\x00",
    "\x9b31m".encode(),
    b"\x07>",
]
#: How the same pieces look once neutralised (shown, not acted on).
SHOWN = [b"\\x1b]52;c;cm0gLXJmIH4=\\x07", b"\\u202eevil", b"\\x00\\x9b31m"]
#: Markup shown as typed: neither a link nor a crash.
MARKUP = b"<[/]>[link=https://evil.example/]x[/link][bold]:smile:"


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


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    # Wide enough that no table folds a marker across lines.
    return pexpect.spawn(
        sys.executable,
        ["-m", "trio_mcp.cli", *args],
        cwd=str(ROOT),
        env=env,
        timeout=30,
        dimensions=(50, 2000),
    )


def everything(child: pexpect.spawn) -> tuple[bytes, int]:
    """All the bytes the terminal received until the command ended, and its status."""
    child.expect(pexpect.EOF)
    data: bytes = child.before
    child.close()
    status: int = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return data, status


def assert_safe(data: bytes, *, shown: bool = True) -> None:
    for piece in RAW:
        assert piece not in data, (piece, data[-2000:])
    assert b"Traceback" not in data, data[-3000:]
    if shown:
        for piece in SHOWN:
            assert piece in data, (piece, data[-2000:])


@pytest.mark.parametrize(
    ("words", "status", "seen"),
    [
        (["tools"], 0, [b"desc <", b"name<", b"fails <", b"a JSON-RPC error <"]),
        (["info"], 0, [b"evil<", b"obey <"]),
        (["resources"], 0, [b"resname<", b"resdesc <", b"evil://res<"]),
        (["templates"], 0, [b"tname<", b"tdesc <"]),
        (["prompts"], 0, [b"prompt<", b"pdesc <"]),
        (["prompt", "hostile"], 0, [b"promptdesc <", b"msg <"]),
        (["read", "evil://text"], 0, [b"resource text <"]),
        (["call", "result"], 0, [b"result <"]),
        (["call", "fail"], 1, [b"Tool error", b"tool error <"]),
        (["call", "broken"], 1, [b"server error <"]),
        (["call", "crash"], 3, [b"dying <", b"starting <"]),
        (["-v", "call", "result"], 0, [b"result <", b"[server stderr] starting <"]),
        (["--log-level", "debug", "call", "result"], 0, [b"result <"]),
    ],
)
def test_every_command_neutralises_server_text(
    env: dict[str, str], words: list[str], status: int, seen: list[bytes]
) -> None:
    child = spawn(env, SERVER, *words)
    data, code = everything(child)
    assert code == status, data[-2000:]
    assert_safe(data)
    for piece in seen:
        assert piece in data, (piece, data[-2000:])
    if (
        words[0] in ("tools", "info", "resources", "prompts", "prompt", "call")
        and words[-1] != "crash"
    ):
        assert MARKUP in data, data[-2000:]  # markup shown as typed, never interpreted


def test_server_stderr_is_said_once(env: dict[str, str]) -> None:
    data, code = everything(spawn(env, SERVER, "call", "crash"))
    assert code == 3
    assert data.count(b"dying <") == 1, data.decode("utf-8", "replace")
    assert data.count(b"starting <") == 1


def test_progress_messages_are_neutralised(env: dict[str, str]) -> None:
    child = spawn(env, SERVER, "call", "progress", "steps=4")
    child.expect(b"progress <")  # the progress bar's text, while it runs
    data, code = everything(child)
    data = child.before + data if isinstance(child.before, bytes) else data
    assert code == 0
    assert b"done" in data
    assert_safe(data, shown=False)


def test_elicitation_form_neutralised(env: dict[str, str]) -> None:
    child = spawn(env, SERVER, "call", "ask")
    child.expect(b"answer\\?")
    seen = child.before
    child.sendline(b"")
    child.expect(b"\\(a string\\):")
    seen += child.before + child.after
    child.sendline(b"Ada")
    # A hostile default is not typed into the line: shown neutralised, Enter keeps it.
    child.expect(b"\\[Enter: default <")
    seen += child.before + child.after
    child.sendline(b"")
    data, code = everything(child)
    seen += data
    assert code == 0
    assert b'action: accept {"name": "Ada", "extra": "default <' in seen
    assert b"elicit <" in seen and b"fielddesc <" in seen
    assert_safe(seen)


def test_interactive_mode_neutralises_banner_lists_completion_and_errors(
    env: dict[str, str],
) -> None:
    child = spawn(env, SERVER)
    child.expect(b"mcp>")
    seen: bytes = child.before
    # Each step waits for its own output (not for a redrawn prompt) before the next one.
    for command, marker in [
        (b"tools", b"Writes to stderr, then dies."),
        (b"call fail", b"tool error <"),
        (b"prompt hostile", b"msg <"),
        (b"call progress steps=2", b"done"),
    ]:
        child.sendline(command)
        child.expect(marker)
        seen += child.before + child.after
        child.expect(b"mcp>")
        seen += child.before
    child.send(b"call na")  # the completion menu shows the hostile tool name
    child.expect(b"name<")
    seen += child.before + child.after
    child.send(b"\x15")  # clear the line
    child.sendline(b"exit")
    data, code = everything(child)
    seen += data
    assert code == 0
    assert b"connected to evil<" in seen
    assert b"tool error <" in seen and b"msg <" in seen
    assert MARKUP in seen
    assert_safe(seen)


def test_json_output_stays_exact(env: dict[str, str]) -> None:
    def run(*words: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "trio_mcp.cli", "--json", SERVER, *words],
            capture_output=True,
            env=env,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            timeout=60,
        )

    proc = run("call", "result")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == f"result {EVIL}"
    # exact JSON, and escapes for everything a terminal acts on: C0 as json writes them,
    # DEL, C1 and U+202E as \\uNNNN too (the bytes a terminal would act on never arrive)
    assert_safe(proc.stdout, shown=False)
    assert b"\\u202eevil" in proc.stdout
    assert b"\\u009b31m" in proc.stdout
    proc = run("tools")
    names = [tool["name"] for tool in json.loads(proc.stdout)]
    assert f"name{EVIL}" in names
    assert_safe(proc.stdout, shown=False)
    # the error envelope on stderr likewise
    proc = run("call", "broken")
    assert proc.returncode == 1
    envelope = json.loads(proc.stderr.splitlines()[-1])
    assert EVIL in envelope["error"]["message"]
    assert_safe(proc.stderr, shown=False)


async def test_authorization_server_text_is_neutralised(capsys: pytest.CaptureFixture[str]) -> None:
    from trio_mcp._auth._browser import _print_url  # pyright: ignore[reportPrivateUsage]
    from trio_mcp._auth._device import DeviceCode, print_device_code

    print_device_code(
        DeviceCode(
            user_code=f"CODE{EVIL}",
            verification_uri=f"https://as.example/device{EVIL}",
            verification_uri_complete=f"https://as.example/d?c={EVIL}",
            expires_in=60,
            interval=5,
        )
    )
    _print_url(f"https://as.example/authorize?x={EVIL}")  # what the loopback browser prints
    err = capsys.readouterr().err.encode()
    assert_safe(err)
    # the login URL is printed exactly as the browser gets it: percent-encoded
    assert b"CODE<" in err and b"authorize?x=%3C%1B]52;c;" in err


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SGR = re.compile("\x1b\\[[0-9;]*m")  # the CLI's own colours


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text(max_size=20))
def test_output_never_lets_a_control_character_through(text: str, name: str) -> None:
    # Plain (piped) and rich (terminal) output: after removing the CLI's own colour
    # sequences, nothing a terminal would act on is left, and no markup crashes.
    import rich.console

    from trio_mcp.cli._output import Output

    for rich_mode in (False, True):
        stream = io.StringIO()
        out = Output(json_mode=False, stream=stream)
        if rich_mode:
            out._console = rich.console.Console(  # pyright: ignore[reportPrivateUsage]
                file=stream, force_terminal=True, width=200, highlight=False, emoji=False
            )
        out.line(text, "bold")
        out.table(f"Tools {name}", ["Name", "Description"], [[name, text], [text, name]])
        written = _SGR.sub("", stream.getvalue())
        assert _CONTROL.search(written) is None, repr(written)

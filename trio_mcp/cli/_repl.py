"""The interactive mode: one connection, a prompt with completion and history."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import AsyncGenerator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio
from msgspec import UNSET

from .. import types as t
from .._exceptions import MCPError
from .._terminal import for_terminal
from ._args import UsageError, argument_parts
from ._connection import EXIT_CONNECTION, Interrupted, classify, describe_error

if TYPE_CHECKING:
    from prompt_toolkit.completion import CompleteEvent, Completion
    from prompt_toolkit.document import Document

    from .._session import ClientSession
    from ._interact import Terminal
    from ._output import Output

__all__ = ["COMMANDS", "RECONNECT", "Host", "Repl"]

RECONNECT = -1
"""What `Repl.run()` returns when the user asks for a new connection."""

COMMANDS = {
    "tools": "tools [--full]: list the tools (--full: descriptions whole)",
    "call": "call NAME [key=value ...]: call a tool",
    "resources": "resources [--full]: list resources",
    "templates": "templates [--full]: list resource templates",
    "read": "read URI: read a resource",
    "prompts": "prompts [--full]: list prompts",
    "prompt": "prompt NAME [key=value ...]: get a prompt",
    "info": "server name, era, capabilities",
    "ping": "check that the server answers",
    "reconnect": "start the server (or connect) again, e.g. after it died",
    "help": "this list",
    "exit": "leave (Ctrl-D too)",
}


def history_path() -> Path:
    """Where the interactive mode keeps its history."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "trio-mcp" / "history"


class Host(Protocol):
    """What the interactive mode uses of the run it belongs to (``cli._app.App``).

    A protocol, so that the dependency points one way: ``_app`` starts a `Repl`
    and ``_repl`` knows only this much of it.
    """

    idle: bool
    """The interactive mode waits for a command (its prompt, or between two prompts)."""

    @property
    def args(self) -> argparse.Namespace:
        """The parsed command line."""
        ...

    @property
    def out(self) -> Output:
        """Where results and notes are printed."""
        ...

    @property
    def term(self) -> Terminal | None:
        """The terminal, when a person answers questions (``None``: ``--no-input``)."""
        ...

    @property
    def tools(self) -> dict[str, t.Tool]:
        """The tools last listed, by name."""
        ...

    def interrupted(self, *, at_prompt: bool = False) -> bool:
        """Count one Ctrl-C; true when it asks to quit."""
        ...

    def reset_interrupts(self) -> None:
        """Start counting Ctrl-C afresh."""
        ...

    async def interruptible(self, operation: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one request under ``--timeout``; Ctrl-C cancels it."""
        ...

    async def list_tools(self, session: ClientSession) -> list[t.Tool]:
        """List the tools and remember them."""
        ...

    async def run_command(self, session: ClientSession, command: str, rest: list[str]) -> int:
        """Run one command."""
        ...

    def on_log(self, note: t.LoggingMessageNotificationParams) -> None:
        """Show one log message of the server."""
        ...


class Repl:
    """The interactive mode over an open session.

    Args:
        app: The run (options, output, Ctrl-C).
        session: The session, kept open until the user leaves.
    """

    def __init__(self, app: Host, session: ClientSession) -> None:
        self.app = app
        self.session = session
        self.resources: list[str] = []
        self.prompts: dict[str, list[str]] = {}
        self.cancelled = False
        self.gone = False  # the connection died: only reconnect, help and exit work
        self.reconnect = False
        self.stale: set[str] = set()
        """The lists the server said changed since they were last fetched."""
        self.ready = False
        """The banner has been shown (notices before it are not printed)."""

    def _notify(self, text: str) -> None:
        self.app.out.note(text, "cyan")

    def _on_list_changed(self, kind: Any) -> None:
        # A burst of the same notice (servers send several while they start) is one line,
        # and none before the banner: the lists are fetched again before the next prompt.
        first = kind not in self.stale
        self.stale.add(kind)
        if first and self.ready:
            self._notify(f"[server] the {kind} list changed")

    def _on_updated(self, note: Any) -> None:
        self._notify(f"[server] resource updated: {getattr(note, 'uri', note)}")

    def _on_log(self, note: t.LoggingMessageNotificationParams) -> None:
        self.app.on_log(note)

    async def _prefetch(self, kinds: set[str] | None = None) -> None:
        """List the tools, resources and prompts (``kinds``: only those) for completion."""
        caps = self.session.server_capabilities
        wanted = kinds if kinds is not None else {"tools", "resources", "prompts"}
        self.stale -= wanted
        try:
            run = self.app.interruptible
            if caps.tools is not UNSET and "tools" in wanted:
                await self.app.list_tools(self.session)
            if caps.resources is not UNSET and "resources" in wanted:
                resources: list[t.Resource] = await run(self.session.list_resources)
                self.resources = [r.uri for r in resources]
            if caps.prompts is not UNSET and "prompts" in wanted:
                prompts: list[t.Prompt] = await run(self.session.list_prompts)
                self.prompts = {p.name: [a.name for a in (p.arguments or [])] for p in prompts}
        except (MCPError, trio.TooSlowError, Interrupted) as exc:
            self.app.out.note(f"could not list everything: {exc}", "yellow")

    async def run(self) -> int:
        """Read commands until ``exit`` or Ctrl-D.

        Returns:
            The exit status: 0, or 3 when the connection died and the user left without
            reconnecting; `RECONNECT` when the user typed ``reconnect``.
        """
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        from ._interact import run_prompt

        session = self.session
        session.on_list_changed(self._on_list_changed)
        session.on_resource_updated(self._on_updated)
        if self.app.args.log_level is None:
            session.on_log(self._on_log)
        await self._prefetch()
        if self.stale:  # the server changed a list while we listed: once more, quietly
            await self._prefetch(set(self.stale))
        info = session.server_info
        out = self.app.out
        name = f"{info.name} {info.version}" if info else "the server"
        out.wrapped(
            f"connected to {name} ({session.era} era, protocol {session.protocol_version})",
            "green",
        )
        out.wrapped("'help' lists the commands, Tab completes, Ctrl-D leaves", "dim")
        self.ready = True
        history: Any
        try:
            history_path().parent.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(history_path()))
        except OSError:
            history = InMemoryHistory()
        prompt = PromptSession[str](history=history, completer=_completer(self))

        def read_line() -> str:
            # Output that arrives while the prompt waits (notifications) goes above it;
            # a command's own output is written directly, in order.
            with patch_stdout(raw=True):
                return prompt.prompt("mcp> ")

        if True:
            while True:
                if self.stale and not self.gone:
                    await self._prefetch(set(self.stale))
                self.app.idle = True
                line = ""
                async with self._prompt_turn() as turn:
                    try:
                        line = await run_prompt(prompt.app, read_line)
                    except KeyboardInterrupt:
                        if self.app.interrupted(at_prompt=True):
                            return self._status()
                        continue
                    except EOFError:
                        return self._status()
                if turn.cancelled_caught:  # a question from the server took the terminal
                    continue  # it has been answered: prompt again
                self.app.idle = False
                if line.strip():
                    self.app.reset_interrupts()
                self.cancelled = False
                if not await self.execute(line):
                    return RECONNECT if self.reconnect else self._status()
                if not self.cancelled:  # after a cancelled call, the next Ctrl-C leaves
                    self.app.reset_interrupts()

    def _prompt_turn(self) -> AbstractAsyncContextManager[trio.CancelScope]:
        term = self.app.term
        return term.prompt_turn() if term is not None else _own_scope()

    def _status(self) -> int:
        return EXIT_CONNECTION if self.gone else 0

    async def execute(self, line: str) -> bool:
        """Run one line; False when the user leaves."""

        out = self.app.out
        try:
            words = shlex.split(line)
        except ValueError as exc:
            out.error(str(exc))
            return True
        if not words:
            return True
        command, rest = words[0], words[1:]
        if command in ("exit", "quit"):
            return False
        if command == "help":
            for name, text in COMMANDS.items():
                out.wrapped(f"  {name:<10} {text}", indent=13)
            return True
        if command == "reconnect":
            self.reconnect = True
            return False
        if self.gone:
            out.error("not connected: type 'reconnect' to connect again, or 'exit'")
            return True

        try:
            await self.app.run_command(self.session, command, rest)
        except Interrupted:
            self.cancelled = True
            out.note("cancelled (Ctrl-C again to leave)", "yellow")
        except (MCPError, UsageError, trio.TooSlowError) as exc:
            out.error(describe_error(exc, stderr_shown=self.app.args.verbose))
            if self.session.closed or classify(exc)[1] == "connection":
                self.gone = True
                out.error(
                    "the connection is gone: type 'reconnect' to connect again, "
                    "or 'exit' (status 3)"
                )
        return True


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


@asynccontextmanager
async def _own_scope() -> AsyncGenerator[trio.CancelScope]:
    with trio.CancelScope() as scope:
        yield scope


def _completer(repl: Repl) -> Any:
    from prompt_toolkit.completion import Completer, Completion

    class ReplCompleter(Completer):
        """Completes command words, tool, prompt and resource names, and argument names."""

        def get_completions(
            self, document: Document, complete_event: CompleteEvent
        ) -> Iterable[Completion]:
            del complete_event
            text = document.text_before_cursor
            words = text.split()
            if text.endswith(" ") or not words:
                words.append("")
            current = words[-1]
            candidates: list[str] = []
            meta: dict[str, str] = {}
            if len(words) == 1:
                candidates = list(COMMANDS)
                meta = {name: text.partition(": ")[2] or text for name, text in COMMANDS.items()}
            elif words[0] == "call" and len(words) == 2:
                candidates = sorted(repl.app.tools)
                meta = {name: _str(tool.description) for name, tool in repl.app.tools.items()}
            elif words[0] == "call" and words[1] in repl.app.tools:
                schema = repl.app.tools[words[1]].input_schema
                given = {w.split("=", 1)[0].rstrip(":") for w in words[2:-1]}
                for name, rest in argument_parts(schema):
                    if name not in given:
                        candidates.append(f"{name}=")
                        meta[f"{name}="] = rest.removeprefix(": ")  # type*, = default
            elif words[0] == "read" and len(words) == 2:
                candidates = repl.resources
            elif words[0] == "prompt" and len(words) == 2:
                candidates = sorted(repl.prompts)
            elif words[0] == "prompt" and words[1] in repl.prompts:
                candidates = [f"{name}=" for name in repl.prompts[words[1]]]
            for candidate in candidates:
                if candidate.startswith(current):
                    # The menu shows server names neutralised (plain text, no markup).
                    yield Completion(
                        candidate,
                        start_position=-len(current),
                        display=for_terminal(candidate, newlines=False),
                        display_meta=for_terminal(meta.get(candidate, ""), newlines=False),
                    )

    return ReplCompleter()

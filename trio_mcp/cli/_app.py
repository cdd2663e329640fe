"""Running the commands: one connection, one-shot commands, Ctrl-C, exit statuses."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager, nullcontext
from typing import Any, TextIO, cast

import trio

from .. import types as t
from .._connect import _resolve_target, open_mcp_session, with_transport_options
from .._exceptions import MCPError, ServerError
from .._session import ClientSession
from .._terminal import for_terminal, json_for_terminal
from ._args import (
    SERVER_COMMANDS,
    UnknownName,
    UsageError,
    argument_parts,
    did_you_mean,
    load_argument_files,
    parse_arguments,
    read_arguments,
)
from ._connection import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    Connection,
    ConnectTimeout,
    Interrupted,
    classify,
    describe_error,
    read_schema_cache,
    resolve,
    with_login_hint,
    write_schema_cache,
)
from ._interact import Terminal
from ._layout import Entry
from ._output import Output, to_plain
from ._repl import RECONNECT, Repl
from ._wire import WiretapFactory

__all__ = ["App", "Interrupted"]

_LISTS = frozenset({"tools", "resources", "templates", "prompts"})
"""The commands that list things (they take ``--full``)."""
_COMMAND_WORDS = (*SERVER_COMMANDS, "help", "exit", "reconnect")
_CALL_USAGE = "call needs a tool name: call NAME [key=value ...] ('tools' lists the names)"


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def argument_summary(schema: Mapping[str, Any]) -> str:
    """``text: string*, seconds: number = 1.0`` for a tool's input schema."""
    return ", ".join(name + rest for name, rest in argument_parts(schema))


def _more(command: str) -> str:
    """The line under a shortened list: how to see it whole."""
    return f"(… shortened: '{command} --full' shows every description whole)"


def unknown_tool(name: str, known: list[str]) -> str:
    """Say that the server has no tool ``name``: the likely one first, then all of them."""
    hint = did_you_mean(name, known)
    listing = ", ".join(known) or "none"
    return f"the server has no tool named {name!r}{hint}; its tools: {listing}"


def _open_output(path: str | None) -> tuple[TextIO | None, UsageError | None]:
    """The ``--output`` file, created or emptied now (as a shell's ``>`` would)."""
    if path is None or path == "-":
        return None, None
    try:
        return open(path, "w", encoding="utf-8"), None  # closed by App.main()
    except OSError as exc:
        return None, UsageError(f"--output: cannot write {path!r}: {exc.strerror or exc}")


class _Progress:
    """A spinner, then a progress bar, on a terminal's stderr while a tool call runs.

    It appears ``delay`` seconds after the call starts (a quick call shows nothing) with
    the tool's name and the time elapsed, and moves ten times a second from a Trio task
    (no thread), between progress notifications too; the first notification with a total
    adds a bar and a percentage. Never in ``--json`` mode nor when stderr is not a
    terminal; hidden while a person answers a question from the server.
    """

    DELAY = 0.25  # seconds before anything shows
    TICK = 0.1  # seconds between redraws

    def __init__(self, out: Output, label: str) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._label = for_terminal(label, newlines=False)
        self._shown = False
        self._paused = False
        self._done = False
        self._scope = trio.CancelScope()
        if out.err_console is not None and not out.json_mode:
            try:
                import rich.progress
            except ImportError:  # pragma: no cover
                return
            self._bar = rich.progress.Progress(
                rich.progress.SpinnerColumn(),
                rich.progress.TextColumn("{task.description}", markup=False),
                rich.progress.BarColumn(),
                rich.progress.TaskProgressColumn(),
                rich.progress.TimeElapsedColumn(),
                console=out.err_console,
                transient=True,
                auto_refresh=False,
            )
            self._task = self._bar.add_task(self._label, total=None)  # elapsed from now

    async def run(self) -> None:
        """Show the spinner after the delay and keep it moving until `stop()`."""
        if self._bar is None:
            return
        with self._scope:
            await trio.sleep(self.DELAY)
            while not self._done:
                self._show()
                await trio.sleep(self.TICK)

    def _show(self) -> None:
        if self._done or self._paused:
            return
        if not self._shown:
            self._bar.start()
            self._shown = True
        self._bar.refresh()

    def update(self, note: t.ProgressNotificationParams) -> None:
        if self._bar is None:
            return
        total = note.total if isinstance(note.total, (int, float)) else None
        text = f"{self._label}: {note.message}" if isinstance(note.message, str) else self._label
        text = for_terminal(text, newlines=False)  # server text, shown as plain text
        self._bar.update(self._task, completed=note.progress, total=total, description=text)
        self._show()

    @contextmanager
    def paused(self) -> Generator[None]:
        """Hide the display while a person answers the server (the prompt owns the line)."""
        if self._bar is None or self._paused:
            yield
            return
        self._paused = True
        if self._shown:
            self._bar.stop()
            self._shown = False
        try:
            yield
        finally:
            self._paused = False

    def stop(self) -> None:
        self._done = True
        self._scope.cancel()
        if self._bar is not None and self._shown:
            self._bar.stop()
            self._shown = False


class App:
    """One run of the command: options, output, the terminal, Ctrl-C.

    Args:
        args: The parsed command line.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._output_file, self._output_error = _open_output(getattr(args, "output", None))
        self.out = Output(json_mode=args.json, stream=self._output_file)
        interactive = sys.stdin.isatty() and not args.no_input
        self.term: Terminal | None = Terminal(self.out) if interactive else None
        if self.term is not None:
            self.term.answering = self.person_answering
        self.conn: Connection | None = None
        self._current: trio.CancelScope | None = None
        self._root: trio.CancelScope | None = None
        self._interrupts = 0
        self._cancelled_by_user = False
        self._quit_idle = False
        self.idle = False
        """The interactive mode waits for a command (its prompt, or between two prompts)."""
        self.session: ClientSession | None = None
        self.tools: dict[str, t.Tool] = {}
        self._nursery: trio.Nursery | None = None
        self._progress: _Progress | None = None

    # -- Ctrl-C ----------------------------------------------------------------------------

    async def _watch_sigint(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # run from another thread (an embedding app): Ctrl-C is not ours to take
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                self.interrupted()

    def interrupted(self, *, at_prompt: bool = False) -> bool:
        """Count one Ctrl-C: cancel the running request, or quit.

        The first Ctrl-C during a request cancels it; at the interactive prompt it only
        warns. Anywhere else (connecting, starting the server) it quits at once (130).

        Args:
            at_prompt: The interactive mode's prompt (not a request) saw this Ctrl-C.

        Returns:
            True when this Ctrl-C asks to quit.
        """
        self._interrupts += 1
        at_prompt = at_prompt or self.idle
        if self._current is not None and self._interrupts == 1:
            self.out.note("cancelling (Ctrl-C again to quit)", "yellow")
            self._cancelled_by_user = True
            self._current.cancel()
            return False
        if at_prompt and self._interrupts == 1:
            self.out.note("(Ctrl-C again or Ctrl-D to leave)")
            return False
        self._quit_idle = at_prompt
        if self._root is not None:
            self._root.cancel()
        return True

    def reset_interrupts(self) -> None:
        """Start counting Ctrl-C afresh (a new command began)."""
        self._interrupts = 0

    async def interruptible(self, operation: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one request under ``--timeout``; Ctrl-C cancels it (the server is told).

        The deadline is this scope's, not the session's, so that `person_answering()`
        can pause it while a person answers the server's question.

        Raises:
            Interrupted: Ctrl-C cancelled the request.
            trio.TooSlowError: ``--timeout`` ran out.
        """
        timeout: float | None = self.args.timeout or None
        self._cancelled_by_user = False
        with trio.CancelScope() as scope:
            if timeout is not None:
                scope.deadline = trio.current_time() + timeout
            self._current = scope
            try:
                return await operation(*args, **kwargs)
            finally:
                self._current = None
                if self.term is not None:
                    self.term.withdraw()  # a question left over from this request is moot
        if self._cancelled_by_user or timeout is None:
            raise Interrupted("cancelled")
        raise trio.TooSlowError(f"the request took longer than --timeout {timeout:g} s")

    @contextmanager
    def person_answering(self) -> Generator[None]:
        """Pause the running request's ``--timeout`` while a person answers the server."""
        scope = self._current
        hidden = self._progress.paused() if self._progress is not None else nullcontext()
        if scope is None or scope.deadline == math.inf:
            with hidden:
                yield
            return
        remaining = max(scope.deadline - trio.current_time(), 0.0)
        scope.deadline = math.inf
        try:
            with hidden:
                yield
        finally:
            scope.deadline = trio.current_time() + remaining

    # -- the connection --------------------------------------------------------------------

    def _wire(self, elapsed: float, direction: str, data: bytes) -> None:
        arrow = "→" if direction == ">" else "←"
        stamp = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        text = for_terminal(data.decode("utf-8", "replace"), newlines=False)
        print(f"{stamp} +{elapsed:7.3f}s {arrow} {text}", file=sys.stderr, flush=True)

    def _stderr(self, line: str) -> None:
        if self.conn is not None:
            self.conn.stderr_tail.append(line)
        if self.args.verbose:
            print(
                f"[server stderr] {for_terminal(line, newlines=False)}", file=sys.stderr, flush=True
            )

    async def prepare(self) -> Connection:
        """Resolve the target (no process starts)."""
        if self.conn is None:
            self.conn = await resolve(self.args, self._stderr)
        return self.conn

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[ClientSession]:
        """Open the session; ``--timeout`` bounds the whole connect (start and handshake)."""
        conn = await self.prepare()
        target: Any
        target, options = with_transport_options(conn.target, conn.options)
        if self.args.verbose:
            target = WiretapFactory(_resolve_target(target, {}), self._wire)
        handlers: dict[str, Any] = {}
        if self.term is not None:
            handlers = {
                "sampling": self.term.sampling,
                "elicitation": self.term.elicitation,
                "elicitation_modes": ("form", "url"),
            }
        timeout: float | None = self.args.timeout or None
        connected = False
        with trio.CancelScope() as scope:
            if timeout is not None:
                scope.deadline = trio.current_time() + timeout
            async with open_mcp_session(
                target,
                protocol=self.args.protocol,
                init_timeout=timeout,  # requests: interruptible's own, pausable deadline
                **handlers,
                **options,
            ) as session:
                scope.deadline = math.inf
                connected = True
                self.session = session
                await self._subscribe(session)
                yield session
        if scope.cancelled_caught and not connected:
            raise ConnectTimeout(f"connecting took longer than --timeout {timeout:g} s")

    async def _subscribe(self, session: ClientSession) -> None:
        level: str | None = self.args.log_level
        if level is not None:
            session.on_log(self.on_log)
            try:
                await self.interruptible(session.set_logging_level, level)
            except Exception as exc:  # a server without logging: say so, go on
                self.out.note(f"the server did not accept --log-level {level}: {exc}", "yellow")

    def on_log(self, note: t.LoggingMessageNotificationParams) -> None:
        """Show one log message of the server (``--log-level``)."""
        data = note.data if isinstance(note.data, str) else json.dumps(note.data)
        source = f" {note.logger}" if isinstance(note.logger, str) else ""
        style = "red" if note.level in ("error", "critical", "alert", "emergency") else "dim"
        self.out.note(f"[{note.level}{source}] {data}", style)

    # -- commands --------------------------------------------------------------------------

    async def list_tools(self, session: ClientSession) -> list[t.Tool]:
        """List the tools, remember them and cache their schemas."""
        tools: list[t.Tool] = await self.interruptible(session.list_tools)
        self.tools = {tool.name: tool for tool in tools}
        if self.conn is not None:
            write_schema_cache(self.conn, {tool.name: tool.input_schema for tool in tools})
        return tools

    def show_tools(self, tools: list[t.Tool], *, full: bool = False) -> None:
        """Print the tools (``full``: descriptions whole)."""
        if self.out.json_mode:
            self.out.json([to_plain(tool) for tool in tools])
            return
        rows = [
            [tool.name, argument_summary(tool.input_schema), _str(tool.description)]
            for tool in tools
        ]
        entries = [
            Entry(
                tool.name,
                argument_parts(tool.input_schema),
                description=_str(tool.description),
            )
            for tool in tools
        ]
        self.out.listing(
            "Tools",
            entries,
            columns=["Name", "Arguments (* required)", "Description"],
            rows=rows,
            full=full,
            more=_more("tools"),
        )

    def show_info(self, session: ClientSession) -> None:
        """Print server name, era, protocol, capabilities."""
        info = session.server_info
        caps = to_plain(session.server_capabilities)
        if self.out.json_mode:
            self.out.json(
                {
                    "server": to_plain(info) if info else None,
                    "era": session.era,
                    "protocolVersion": session.protocol_version,
                    "capabilities": caps,
                    "instructions": session.instructions,
                }
            )
            return
        name = f"{info.name} {info.version}" if info else "?"
        rows = [
            ["server", name],
            ["era", str(session.era)],
            ["protocol", str(session.protocol_version)],
            ["capabilities", ", ".join(sorted(caps)) or "none"],
        ]
        if session.instructions:
            rows.append(["instructions", session.instructions])
        self.out.table("Server", ["Field", "Value"], rows)

    async def tool_schema(
        self, session: ClientSession | None, name: str
    ) -> Mapping[str, Any] | None:
        """The input schema of a tool: cached, or listed."""
        if name in self.tools:
            return self.tools[name].input_schema
        if session is None:
            conn = await self.prepare()
            cached = read_schema_cache(conn)
            found: Any = (cached or {}).get(name)
            return cast("Mapping[str, Any]", found) if isinstance(found, dict) else None
        await self.list_tools(session)
        if name not in self.tools:
            raise UnknownName(unknown_tool(name, sorted(self.tools)))
        return self.tools[name].input_schema

    async def call(self, session: ClientSession, name: str, words: list[str]) -> int:
        """Call a tool with command-line arguments; print the result.

        Arguments that fail a schema listed earlier (in the interactive mode, before a
        ``notifications/tools/list_changed`` we missed) are checked once more against a fresh
        listing before they are rejected: a stale schema never blames a valid argument.
        """
        listed_before = name in self.tools
        schema = await self.tool_schema(session, name)
        try:
            arguments = read_arguments(name, words, schema)
        except UsageError:
            if not listed_before:
                raise
            self.tools = {}
            schema = await self.tool_schema(session, name)
            arguments = read_arguments(name, words, schema)
        progress = _Progress(self.out, name)
        self._progress = progress
        if self._nursery is not None:
            self._nursery.start_soon(progress.run)
        try:
            result: t.CallToolResult = await self.interruptible(
                session.call_tool, name, arguments, on_progress=progress.update
            )
        finally:
            progress.stop()
            self._progress = None
        self.out.tool_result(result)
        return EXIT_TOOL_ERROR if result.is_error else EXIT_OK

    async def run_command(self, session: ClientSession, command: str, rest: list[str]) -> int:
        """Run one command (one-shot or typed in the interactive mode)."""
        full = command in _LISTS and "--full" in rest
        if command in _LISTS and [word for word in rest if word != "--full"]:
            raise UsageError(f"{command} takes no arguments (only --full)")
        if command == "info":
            self.show_info(session)
        elif command == "tools":
            self.show_tools(await self.list_tools(session), full=full)
        elif command == "call":
            if not rest:
                raise UsageError(_CALL_USAGE)
            return await self.call(session, rest[0], rest[1:])
        elif command == "resources":
            items: list[t.Resource] = await self.interruptible(session.list_resources)
            if self.out.json_mode:
                self.out.json([to_plain(r) for r in items])
            else:
                rows = [[r.uri, r.name, _str(r.mime_type), _str(r.description)] for r in items]
                entries = [
                    Entry(
                        r.uri,
                        detail=" · ".join(x for x in (r.name, _str(r.mime_type)) if x),
                        description=_str(r.description),
                    )
                    for r in items
                ]
                self.out.listing(
                    "Resources",
                    entries,
                    columns=["URI", "Name", "Type", "Description"],
                    rows=rows,
                    full=full,
                    more=_more("resources"),
                )
        elif command == "templates":
            temps: list[t.ResourceTemplate] = await self.interruptible(
                session.list_resource_templates
            )
            if self.out.json_mode:
                self.out.json([to_plain(r) for r in temps])
            else:
                rows = [[r.uri_template, r.name, _str(r.description)] for r in temps]
                entries = [
                    Entry(
                        r.uri_template,
                        detail=" · ".join(x for x in (r.name, _str(r.mime_type)) if x),
                        description=_str(r.description),
                    )
                    for r in temps
                ]
                self.out.listing(
                    "Resource templates",
                    entries,
                    columns=["URI template", "Name", "Description"],
                    rows=rows,
                    full=full,
                    more=_more("templates"),
                )
        elif command == "read":
            if len(rest) != 1:
                raise UsageError("read needs one URI")
            self.out.read_result(await self.interruptible(session.read_resource, rest[0]))
        elif command == "prompts":
            prompts: list[t.Prompt] = await self.interruptible(session.list_prompts)
            if self.out.json_mode:
                self.out.json([to_plain(p) for p in prompts])
            else:
                rows = [
                    [
                        p.name,
                        ", ".join(
                            a.name + ("*" if a.required is True else "")
                            for a in (p.arguments or [])
                        ),
                        _str(p.description),
                    ]
                    for p in prompts
                ]
                entries = [
                    Entry(
                        p.name,
                        [(a.name, "*" if a.required is True else "") for a in (p.arguments or [])],
                        description=_str(p.description),
                    )
                    for p in prompts
                ]
                self.out.listing(
                    "Prompts",
                    entries,
                    columns=["Name", "Arguments (* required)", "Description"],
                    rows=rows,
                    full=full,
                    more=_more("prompts"),
                )
        elif command == "prompt":
            if not rest:
                raise UsageError("prompt needs a prompt name")
            strings = prompt_arguments(rest[1:])
            try:
                got = await self.interruptible(session.get_prompt, rest[0], strings)
            except ServerError as exc:
                await self._no_such_prompt(session, rest[0], exc)
                raise
            self.out.prompt_result(got)
        elif command == "ping":
            await self.interruptible(session.ping)
            if self.out.json_mode:
                self.out.json({})
            else:
                self.out.line("pong")
        else:
            hint = did_you_mean(command, [*_COMMAND_WORDS])
            raise UsageError(f"unknown command {command!r}{hint} ('help' lists the commands)")
        return EXIT_OK

    async def _no_such_prompt(self, session: ClientSession, name: str, exc: Exception) -> None:
        """After a failed ``prompts/get``: when the server has no prompt ``name``, say which
        it has, the likely one first (else return, and the server's error stands)."""
        try:
            prompts: list[t.Prompt] = await self.interruptible(session.list_prompts)
        except MCPError:  # no listing (no prompts capability...): the server's error stands
            return
        names = [p.name for p in prompts]
        if name not in names:
            hint = did_you_mean(name, names)
            listing = ", ".join(names) or "none"
            raise UnknownName(
                f"the server has no prompt named {name!r}{hint}; its prompts: {listing}"
            ) from exc

    # -- the whole run ---------------------------------------------------------------------

    async def main(self) -> int:
        """Run the command line; returns the exit status (errors raise, bare)."""
        if self._output_error is not None:
            raise self._output_error
        try:
            return await self._main()
        finally:
            if self._output_file is not None:
                self._output_file.close()

    async def _main(self) -> int:
        failure: Exception | None = None
        status = EXIT_INTERRUPTED
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._watch_sigint)
            try:
                with trio.CancelScope() as root:
                    self._root = root
                    status = await self._run()
            except Exception as exc:  # re-raised bare below, never as an ExceptionGroup
                failure = with_login_hint(exc, self.conn, self.args)
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if self._root is not None and self._root.cancelled_caught:
            if self._quit_idle and self.args.command is None:
                return EXIT_OK  # the interactive mode, left with Ctrl-C at the prompt
            raise Interrupted("interrupted")
        return status

    async def _run(self) -> int:
        args = self.args
        if args.command == "call" and args.name is None:
            raise UsageError(_CALL_USAGE)
        if args.command in ("call", "prompt"):
            # Files and stdin are read once, now; a malformed word is refused before the
            # server starts. The schema cache never refuses on its own: it may be stale, so
            # the arguments are checked against the schema the server lists (see call()).
            args.arguments = load_argument_files(args.arguments)
            if args.command == "call":  # prompt arguments are strings, sent as typed
                parse_arguments(args.arguments, None)
        if args.command is None:
            return await self._interactive()
        async with self.connect() as session:
            rest: list[str] = []
            if args.command == "call" or args.command == "prompt":
                rest = [args.name, *args.arguments]
            elif args.command == "read":
                rest = [args.uri]
            elif getattr(args, "full", False):
                rest = ["--full"]
            return await self.run_command(session, args.command, rest)

    async def _interactive(self) -> int:
        """The interactive mode: a new connection each time the user types ``reconnect``."""

        while True:
            async with self.connect() as session:
                status = await Repl(self, session).run()
                self.idle = False
            if status != RECONNECT:
                return status
            self.tools = {}
            self.out.note("reconnecting...", "yellow")


def report(app: App | None, json_mode: bool, exc: BaseException) -> int:
    """Print an error (a line, or the JSON envelope) and return its exit status."""
    if isinstance(exc, Interrupted):
        code, kind = EXIT_INTERRUPTED, "interrupted"
    else:
        code, kind = classify(exc)
    message = str(exc) or type(exc).__name__
    if json_mode:
        envelope = {
            "error": {
                "kind": kind,
                "exitCode": code,
                "type": type(exc).__name__,
                "message": message,
            }
        }
        data: Any = getattr(exc, "data", None)
        if data is not None:
            envelope["error"]["data"] = data
        print(json_for_terminal(envelope), file=sys.stderr, flush=True)
        return code
    out = app.out if app is not None else Output(json_mode=False)
    if isinstance(exc, Interrupted):
        out.error("interrupted")
        return code
    out.error(describe_error(exc, stderr_shown=app is not None and app.args.verbose))
    if (
        app is not None
        and app.conn is not None
        and app.conn.stderr_tail
        and kind == "connection"
        and not getattr(exc, "stderr_tail", "")  # the message has already said them
        and not app.args.verbose  # -v printed each line as it came
    ):
        out.note("the server's last stderr lines:")
        for line in app.conn.stderr_tail:
            out.note(f"  {line}")
    return code


def prompt_arguments(words: list[str]) -> dict[str, str]:
    """A prompt's arguments, exactly as typed: ``key=value`` words, or one JSON object.

    Prompt arguments are strings (the protocol says so): nothing is coerced, so ``1.50``
    stays ``"1.50"``, quotes and a leading ``@`` stay. In a JSON object every value must be
    a string.

    Raises:
        UsageError: A word has neither form, or a JSON value is not a string.
    """
    out: dict[str, str] = {}
    for word in words:
        if word.lstrip().startswith("{"):
            try:
                value: Any = json.loads(word)
            except ValueError as exc:
                raise UsageError(f"arguments {word!r} are not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise UsageError("JSON arguments must be an object")
            for key, item in cast("dict[str, Any]", value).items():
                if not isinstance(item, str):
                    raise UsageError(
                        f"prompt argument {key!r}: prompt arguments are strings, "
                        f"got {json.dumps(item)}"
                    )
                out[key] = item
            continue
        key, sep, text = word.partition("=")
        if not sep or not key or key.endswith(":"):
            raise UsageError(
                f"prompt argument {word!r}: use key=value (prompt arguments are strings, "
                "sent as typed) or a JSON object of strings"
            )
        out[key] = text
    return out

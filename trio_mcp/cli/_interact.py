"""Answering the server's requests at the terminal: sampling replies and elicitation forms.

Every question runs prompt_toolkit in a worker thread through `run_prompt()`, which never
abandons it: when the question is cancelled (the server withdrew its request, the user left)
the prompt is told to end, and the thread is waited for, so the terminal is back in its
normal mode and nothing is left reading stdin before anything else happens.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import webbrowser
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, cast

import trio

from .. import types as t
from .._exceptions import ElicitationContentError
from .._handlers import HandlerError, validate_elicitation_content
from .._session import RequestContext
from .._terminal import for_terminal
from ._args import UsageError, coerce, expectation
from ._output import Output, describe_block

__all__ = ["Terminal", "run_prompt"]

# How long a cancelled prompt may take to give the terminal back (it takes milliseconds).
_STOP_GRACE = 5.0


def _stop(app: Any) -> None:
    """Ask a running prompt_toolkit application to end (from any thread)."""
    loop = getattr(app, "loop", None)
    if not getattr(app, "is_running", False) or loop is None:
        return

    def end() -> None:
        future = getattr(app, "future", None)
        if future is not None and not future.done():
            app.exit(exception=EOFError)

    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: it has ended
        loop.call_soon_threadsafe(end)


async def run_prompt(app: Any, read: Callable[[], str]) -> str:
    """Run ``read`` (a prompt_toolkit prompt of ``app``) in a worker thread, cancellably.

    On cancellation the prompt is ended and its thread waited for (shielded, bounded), so
    the terminal's mode is restored and no thread keeps reading stdin; then the
    cancellation goes on.

    Args:
        app: The ``prompt_toolkit`` application ``read`` runs (``PromptSession.app``).
        read: Runs the prompt; its answer is returned.

    Returns:
        What ``read`` returned (its ``EOFError``/``KeyboardInterrupt`` propagate).
    """
    finished = threading.Event()

    def work() -> str:
        try:
            return read()
        finally:
            finished.set()

    try:
        return await trio.to_thread.run_sync(work, abandon_on_cancel=True)
    except trio.Cancelled:
        with trio.move_on_after(_STOP_GRACE) as scope:
            scope.shield = True
            while not finished.is_set():
                _stop(app)
                await trio.sleep(0.02)
        raise


class Terminal:
    """Reads answers from the user, one question at a time, off the Trio thread.

    Args:
        out: Where to show what is asked.
        open_url: Opens a URL the user agreed to (default: the system browser).
    """

    def __init__(self, out: Output, open_url: Callable[[str], object] | None = None) -> None:
        self.out = out
        self._lock = trio.Lock()
        self._open_url = open_url or webbrowser.open
        self._prompt: Any = None
        self._questions: set[trio.CancelScope] = set()
        self._idle_prompt: trio.CancelScope | None = None
        self.answering: Callable[[], contextlib.AbstractContextManager[object]] = (
            contextlib.nullcontext
        )
        """Entered while a person answers a request; the command line pauses its ``--timeout`` there
        (time spent answering does not count)."""

    @staticmethod
    def _read_plain(message: str, default: str) -> str:  # pragma: no cover - no cli extra
        sys.stderr.write(message)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError from None
        return line.rstrip("\n") or default

    async def ask(self, message: str, default: str = "", choices: list[str] | None = None) -> str:
        """Ask one line (Ctrl-C there declines, EOF too); the message is neutralised."""
        message = for_terminal(message, newlines=False)
        try:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter
        except ImportError:  # pragma: no cover - the cli extra is missing
            return await trio.to_thread.run_sync(
                self._read_plain, message, default, abandon_on_cancel=True
            )
        if self._prompt is None:
            self._prompt = PromptSession[str]()
        prompt = self._prompt
        completer = (
            WordCompleter(
                choices, display_dict={c: for_terminal(c, newlines=False) for c in choices}
            )
            if choices
            else None
        )

        def read() -> str:
            answer: str = prompt.prompt(message, default=default, completer=completer)
            return answer

        return await run_prompt(prompt.app, read)

    async def confirm(self, message: str, default: bool = False) -> bool:
        """Ask yes or no."""
        hint = "[Y/n]" if default else "[y/N]"
        answer = (await self.ask(f"{message} {hint} ")).strip().lower()
        return default if not answer else answer in ("y", "yes")

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncGenerator[None]:
        """One request at a time at the terminal, with ``--timeout`` paused meanwhile.

        `withdraw()` ends the turn: the body is cancelled (its prompt ended, the
        terminal given back) and the code after the ``async with`` runs.
        """
        if self._idle_prompt is not None:
            self._idle_prompt.cancel()  # the interactive prompt steps aside (prompt_turn)
        async with self._lock:
            with self.answering(), trio.CancelScope() as scope:
                self._questions.add(scope)
                try:
                    yield
                finally:
                    self._questions.discard(scope)
            if scope.cancelled_caught:
                self.out.line("(the question was withdrawn)", "dim")

    @contextlib.asynccontextmanager
    async def prompt_turn(self) -> AsyncGenerator[trio.CancelScope]:
        """The interactive prompt's turn at the terminal.

        A question from the server that arrives meanwhile (a handshake-era server may ask
        while no request runs) cancels the yielded scope: the prompt ends, the question is
        asked, and the next ``prompt_turn`` waits until it has been answered. So only one
        prompt ever reads the terminal.
        """
        async with self._lock:
            with trio.CancelScope() as scope:
                self._idle_prompt = scope
                try:
                    yield scope
                finally:
                    self._idle_prompt = None

    def withdraw(self) -> None:
        """End every question being asked (the request they belong to has ended)."""
        for scope in self._questions:
            scope.cancel()

    # -- sampling --------------------------------------------------------------------------

    async def sampling(
        self, params: t.CreateMessageRequestParams, ctx: RequestContext
    ) -> dict[str, Any]:
        """Show the sampling request; the user types (or approves) the reply."""
        async with self._turn():
            who = ctx.server_name or "the server"
            self.out.wrapped(
                f"── {who} asks for a model reply (sampling, max {params.max_tokens} tokens)",
                "bold yellow",
                indent=3,
            )
            if isinstance(params.system_prompt, str):
                self.out.line(f"system: {params.system_prompt}", "dim")
            for message in params.messages:
                blocks = message.content if isinstance(message.content, list) else [message.content]
                for block in blocks:
                    text, _ = describe_block(block)
                    self.out.line(f"{message.role}: {text}")
            try:
                reply = await self.ask("reply (empty: decline)> ")
            except (EOFError, KeyboardInterrupt):
                reply = ""
            if not reply.strip():
                self.out.line("declined", "dim")
                raise HandlerError(-1, "the user declined the sampling request")
            return {
                "role": "assistant",
                "content": {"type": "text", "text": reply},
                "model": "human (trio-mcp)",
                "stopReason": "endTurn",
            }
        raise HandlerError(-1, "the sampling request was withdrawn")

    # -- elicitation -----------------------------------------------------------------------

    async def elicitation(
        self, params: t.ElicitRequestFormParams | t.ElicitRequestURLParams, ctx: RequestContext
    ) -> dict[str, Any]:
        """A form from the requested schema, or a checked URL to open with consent."""
        async with self._turn():
            who = ctx.server_name or "the server"
            try:
                if isinstance(params, t.ElicitRequestURLParams):
                    return await self._url(params, who)
                return await self._form(params, who)
            except (EOFError, KeyboardInterrupt):
                self.out.line("cancelled", "dim")
                return {"action": "cancel"}
        return {"action": "cancel"}  # withdrawn

    async def _url(self, params: t.ElicitRequestURLParams, who: str) -> dict[str, Any]:
        from .._urls import check_url

        self.out.wrapped(f"── {who} asks you to open a URL", "bold yellow", indent=3)
        self.out.wrapped(params.message)
        try:
            check = check_url(params.url)
        except ModuleNotFoundError:
            self.out.line("cannot check the URL (install the urls extra); declined", "red")
            return {"action": "decline"}
        self.out.line(f"  domain: {check.display_domain or '?'}", "bold")
        self.out.line(f"  url:    {check.normalized or params.url}")
        for warning in check.warnings:
            self.out.line(f"  warning: {warning}", "yellow")
        if not check.ok:
            self.out.line(f"  blocked: {check.error}; declined", "red")
            return {"action": "decline"}
        if not await self.confirm(f"Open it in your browser ({check.display_domain})?"):
            return {"action": "decline"}
        await trio.to_thread.run_sync(self._open_url, check.normalized or params.url)
        return {"action": "accept"}

    async def _form(self, params: t.ElicitRequestFormParams, who: str) -> dict[str, Any]:
        schema = params.requested_schema
        self.out.wrapped(f"── {who} asks: {params.message}", "bold yellow", indent=3)
        action = (await self.ask("answer? [Y]es / [n]o (decline) / [c]ancel ")).strip().lower()
        if action in ("n", "no", "decline"):
            return {"action": "decline"}
        if action in ("c", "cancel"):
            return {"action": "cancel"}
        props_obj: object = schema.get("properties")
        props: Mapping[str, Any] = (
            cast("Mapping[str, Any]", props_obj) if isinstance(props_obj, Mapping) else {}
        )
        required_obj: object = schema.get("required")
        required = (
            set(cast("list[str]", required_obj)) if isinstance(required_obj, list) else set[str]()
        )
        content: dict[str, Any] = {}
        todo = list(props)
        while True:
            for name in todo:
                spec_obj: object = props[name]
                spec: Mapping[str, Any] = (
                    cast("Mapping[str, Any]", spec_obj) if isinstance(spec_obj, Mapping) else {}
                )
                value = await self._field(name, spec, name in required)
                if value is _SKIP:
                    content.pop(name, None)
                else:
                    content[name] = value
            try:
                validate_elicitation_content(schema, content)
            except ElicitationContentError as exc:
                for problem in exc.problems:
                    self.out.wrapped(f"  {_labelled(problem, props)}", "red", indent=4)
                todo = [n for n in props if any(p.startswith(f"{n}:") for p in exc.problems)]
                if not todo:
                    return {"action": "decline"}
                continue
            return {"action": "accept", "content": content}

    async def _field(self, name: str, spec: Mapping[str, Any], required: bool) -> Any:
        title = _label_of(name, spec)
        description = spec.get("description")
        kind = spec.get("type")
        items: object = spec.get("items")
        # A multi-select (SEP-1330): an array whose items are choices.
        multi = kind == "array" and isinstance(items, Mapping)
        choices, labels = _choices(cast("Mapping[str, Any]", items) if multi else spec)
        multi = multi and choices is not None
        default: Any = spec.get("default")
        mark = "*" if required else ""
        if description:
            self.out.wrapped(f"  {description}", "dim", indent=2)
        if choices is not None:
            for i, (choice, label) in enumerate(zip(choices, labels, strict=True), 1):
                raw = "" if isinstance(choice, bool) or label == str(choice) else f" [{choice}]"
                self.out.wrapped(f"  {i}) {label}{raw}", indent=5)
        while True:
            # A titled choice's default is shown (and typed) as its title, which _pick takes.
            shown = _shown(_as_labels(default, choices, labels) if choices else default)
            hint = f" ({expectation(spec)})" if choices is None else ""
            if multi:
                hint = " (numbers or values, separated by commas)"
            if for_terminal(shown, newlines=False) != shown:
                # A default a terminal would act on is not typed into the line: it is shown
                # neutralised, and Enter keeps it all the same.
                hint += f" [Enter: {shown}]"
                shown = ""
            text = (
                await self.ask(f"{title}{mark}{hint}: ", shown, [str(c) for c in choices or []])
            ).strip()
            if not text:
                if required and default is None:
                    self.out.line(f"  {title} is required", "red")
                    continue
                return _SKIP if default is None else default
            value: Any
            if multi and choices is not None:
                picks = [_pick(str(part), choices, labels) for part in _list_answer(text)]
                if any(pick is _SKIP for pick in picks):
                    self.out.line(
                        f"  choose numbers from 1 to {len(choices)} or values, separated by commas",
                        "red",
                    )
                    continue
                value = picks
            elif choices is not None:
                picked = _pick(text, choices, labels)
                if picked is _SKIP:
                    self.out.line(f"  choose a number from 1 to {len(choices)} or a value", "red")
                    continue
                return picked
            elif kind == "array":
                value = _list_answer(text)
            else:
                try:
                    value = coerce(name, spec, text)
                except UsageError:
                    self.out.line(f"  {title}: expected {expectation(spec)}, got {text!r}", "red")
                    continue
            try:  # check this field now, so the user fixes it while it is asked
                validate_elicitation_content({"properties": {name: spec}}, {name: value})
            except ElicitationContentError as exc:
                for problem in exc.problems:
                    labelled = _labelled(problem, {name: spec})
                    self.out.wrapped(f"  {labelled}", "red", indent=4)
                continue
            return value


_SKIP: Any = object()


def _label_of(name: str, spec: object) -> str:
    """A field's label: its ``title``, else its name."""
    title: object = (
        cast("Mapping[str, Any]", spec).get("title") if isinstance(spec, Mapping) else None
    )
    return title if isinstance(title, str) and title else name


def _labelled(problem: str, props: Mapping[str, Any]) -> str:
    """A validation problem (``name: what``) with the field's label for its name."""
    name, sep, rest = problem.partition(":")
    if sep and name in props:
        return f"{_label_of(name, props[name])}:{rest}"
    return problem


def _as_labels(default: Any, choices: list[Any] | None, labels: list[str]) -> Any:
    """A default choice (or list of them) shown as its title(s) when it has one."""
    if choices is None or default is None:
        return default

    def one(value: Any) -> Any:
        for choice, label in zip(choices, labels, strict=True):
            if choice == value and type(choice) is type(value):
                return label
        return value

    if isinstance(default, list):
        return [one(v) for v in default]  # pyright: ignore[reportUnknownVariableType]
    return one(default)


def _shown(default: Any) -> str:
    """A default as pre-filled text: strings as they are, lists comma-separated."""
    if default is None:
        return ""
    if isinstance(default, str):
        return default
    if isinstance(default, list) and all(
        isinstance(v, str) and "," not in v and v.strip() == v and v
        for v in cast("list[object]", default)
    ):
        return ", ".join(cast("list[str]", default))
    return json.dumps(default)


def _list_answer(text: str) -> list[Any]:
    """An array answer: a JSON array as typed, or comma-separated values."""
    if text.startswith("["):
        try:
            value: Any = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(value, list):
                return value  # pyright: ignore[reportUnknownVariableType]
    return [part.strip() for part in text.split(",") if part.strip()]


def _choices(spec: Mapping[str, Any]) -> tuple[list[Any] | None, list[str]]:
    """The enum values of a property (or of a multi-select's ``items``) and their labels.

    Every SEP-1330 shape: ``enum`` (with legacy ``enumNames``), titled ``oneOf`` (single
    select) or ``anyOf`` (multi-select items) of ``const``, and booleans.
    """
    enum: object = spec.get("enum")
    if isinstance(enum, list):
        values: list[Any] = list(cast("list[object]", enum))
        names: object = spec.get("enumNames")
        labels: list[str] = (
            [str(x) for x in cast("list[object]", names)]
            if isinstance(names, list) and len(cast("list[object]", names)) == len(values)
            else [str(v) for v in values]
        )
        return values, labels
    one_of: object = spec.get("oneOf", spec.get("anyOf"))
    if isinstance(one_of, list):
        values = []
        labels = []
        for option in cast("list[object]", one_of):
            if isinstance(option, Mapping) and "const" in option:
                opt = cast("Mapping[str, Any]", option)
                values.append(opt["const"])
                labels.append(str(opt.get("title", opt["const"])))
        if values:
            return values, labels
    if spec.get("type") == "boolean":
        return [True, False], ["yes", "no"]
    return None, []


def _pick(text: str, values: list[Any], labels: list[str]) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(values):
        return values[int(text) - 1]
    for value, label in zip(values, labels, strict=True):
        if text in (str(value), label) or text.lower() == label.lower():
            return value
    if values == [True, False] and text.lower() in ("y", "n", "true", "false"):
        return text.lower() in ("y", "true")
    return _SKIP

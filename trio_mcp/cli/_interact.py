"""Answering the server's requests at the terminal: sampling replies and elicitation forms."""

from __future__ import annotations

import json
import sys
import webbrowser
from collections.abc import Callable, Mapping
from typing import Any, cast

import trio

from .. import _types as t
from .._exceptions import ElicitationContentError
from .._handlers import HandlerError, RequestContext, validate_elicitation_content
from ._args import UsageError, coerce, expectation
from ._output import Output, describe_block

__all__ = ["Terminal"]


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

    def _read_line(self, message: str, default: str, choices: list[str] | None) -> str:
        try:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter
        except ImportError:  # pragma: no cover - the cli extra is missing
            sys.stderr.write(message)
            sys.stderr.flush()
            line = sys.stdin.readline()
            if not line:
                raise EOFError from None
            return line.rstrip("\n") or default
        if self._prompt is None:
            self._prompt = PromptSession[str]()
        completer = WordCompleter(choices) if choices else None
        answer: str = self._prompt.prompt(message, default=default, completer=completer)
        return answer

    async def ask(self, message: str, default: str = "", choices: list[str] | None = None) -> str:
        """Ask one line (in a worker thread; Ctrl-C there declines, EOF too)."""
        return await trio.to_thread.run_sync(
            self._read_line, message, default, choices, abandon_on_cancel=True
        )

    async def confirm(self, message: str, default: bool = False) -> bool:
        """Ask yes or no."""
        hint = "[Y/n]" if default else "[y/N]"
        answer = (await self.ask(f"{message} {hint} ")).strip().lower()
        return default if not answer else answer in ("y", "yes")

    # -- sampling --------------------------------------------------------------------------

    async def sampling(
        self, params: t.CreateMessageRequestParams, ctx: RequestContext
    ) -> dict[str, Any]:
        """Show the sampling request; the user types (or approves) the reply."""
        async with self._lock:
            who = ctx.server_name or "the server"
            self.out.line(
                f"── {who} asks for a model reply (sampling, max {params.max_tokens} tokens)",
                "bold yellow",
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

    # -- elicitation -----------------------------------------------------------------------

    async def elicitation(
        self, params: t.ElicitRequestFormParams | t.ElicitRequestURLParams, ctx: RequestContext
    ) -> dict[str, Any]:
        """A form from the requested schema, or a checked URL to open with consent."""
        async with self._lock:
            who = ctx.server_name or "the server"
            try:
                if isinstance(params, t.ElicitRequestURLParams):
                    return await self._url(params, who)
                return await self._form(params, who)
            except (EOFError, KeyboardInterrupt):
                self.out.line("cancelled", "dim")
                return {"action": "cancel"}

    async def _url(self, params: t.ElicitRequestURLParams, who: str) -> dict[str, Any]:
        from .._urls import check_url

        self.out.line(f"── {who} asks you to open a URL", "bold yellow")
        self.out.line(params.message)
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
        self.out.line(f"── {who} asks: {params.message}", "bold yellow")
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
                    self.out.line(f"  {problem}", "red")
                todo = [n for n in props if any(p.startswith(f"{n}:") for p in exc.problems)]
                if not todo:
                    return {"action": "decline"}
                continue
            return {"action": "accept", "content": content}

    async def _field(self, name: str, spec: Mapping[str, Any], required: bool) -> Any:
        title = spec.get("title") or name
        description = spec.get("description")
        choices, labels = _choices(spec)
        default: Any = spec.get("default")
        mark = "*" if required else ""
        if description:
            self.out.line(f"  {description}", "dim")
        if choices is not None:
            for i, (choice, label) in enumerate(zip(choices, labels, strict=True), 1):
                self.out.line(f"  {i}) {label}" + (f" [{choice}]" if label != str(choice) else ""))
        kind = spec.get("type")
        while True:
            shown = (
                ""
                if default is None
                else (json.dumps(default) if not isinstance(default, str) else default)
            )
            hint = f" ({expectation(spec)})" if choices is None else ""
            text = (
                await self.ask(f"{title}{mark}{hint}: ", shown, [str(c) for c in choices or []])
            ).strip()
            if not text:
                if required and default is None:
                    self.out.line(f"  {name} is required", "red")
                    continue
                return _SKIP if default is None else default
            if choices is not None:
                picked = _pick(text, choices, labels)
                if picked is _SKIP:
                    self.out.line(f"  choose a number from 1 to {len(choices)} or a value", "red")
                    continue
                return picked
            value: Any
            if kind == "array":
                value = [part.strip() for part in text.split(",") if part.strip()]
            else:
                try:
                    value = coerce(name, spec, text)
                except UsageError as exc:
                    self.out.line(f"  {exc}", "red")
                    continue
            try:  # check this field now, so the user fixes it while it is asked
                validate_elicitation_content({"properties": {name: spec}}, {name: value})
            except ElicitationContentError as exc:
                for problem in exc.problems:
                    self.out.line(f"  {problem}", "red")
                continue
            return value


_SKIP: Any = object()


def _choices(spec: Mapping[str, Any]) -> tuple[list[Any] | None, list[str]]:
    """The enum values of a property and their labels (every SEP-1330 shape, single select)."""
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
    one_of: object = spec.get("oneOf")
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

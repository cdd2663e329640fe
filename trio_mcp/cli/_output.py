"""Printing for people (tables and colour with rich on a terminal) and for scripts (``--json``).

Every line for a person goes through :class:`Output`, and :class:`Output` passes every string
through :func:`trio_mcp.for_terminal` and never lets rich parse markup: the CLI's own words
hold no control character, so neutralising the whole line costs nothing and no server text
can slip past. ``--json`` documents are written exactly as they are.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from msgspec import UNSET

from .. import types as t
from .._terminal import for_terminal, json_for_terminal
from ._args import as_mapping

__all__ = ["Output", "StdoutClosed", "to_plain"]


class StdoutClosed(Exception):
    """Whoever reads our output went away (``trio-mcp ... | head``): stop quietly."""


_NOISE = frozenset({"_meta", "resultType", "nextCursor", "ttlMs", "cacheScope"})


def to_plain(value: Any) -> Any:
    """Wire form of a value without protocol noise (``_meta``, ``resultType``, ...)."""
    if isinstance(value, (dict, list)):
        return _strip(value)
    return _strip(t.to_builtins(value))


def _strip(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k not in _NOISE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(data, list):
        return [_strip(v) for v in data]  # pyright: ignore[reportUnknownVariableType]
    return data


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except ValueError:
        n = len(data)
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KB"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def describe_block(block: Any) -> tuple[str, str | None]:
    """A content block as ``(text, style)``: text as is, everything else summarised."""
    match block:
        case t.TextContent():
            return block.text, None
        case t.ImageContent():
            return f"[image {block.mime_type}, {_size(block.data)}]", "magenta"
        case t.AudioContent():
            return f"[audio {block.mime_type}, {_size(block.data)}]", "magenta"
        case t.ResourceLink():
            return f"[link {block.name}: {block.uri}]", "cyan"
        case t.EmbeddedResource():
            res = block.resource
            mime = _text(getattr(res, "mime_type", None))
            kind = f" ({mime})" if mime else ""
            if isinstance(res, t.TextResourceContents):
                return f"[resource {res.uri}{kind}]\n{res.text}", "cyan"
            blob = getattr(res, "blob", "")
            return f"[resource {res.uri}{kind}, {_size(str(blob))}]", "cyan"
        case _:
            plain = to_plain(block)
            tag: Any = as_mapping(plain).get("type", "?")
            return f"[{tag} content]", "yellow"


class Output:
    """Where results go: human text (rich on a terminal) or JSON.

    Args:
        json_mode: Print JSON documents for scripts.
        stream: The stream for results (default: stdout).
    """

    def __init__(self, *, json_mode: bool, stream: TextIO | None = None) -> None:
        self.json_mode = json_mode
        self._stream = stream
        self._console: Any = None
        self.err_console: Any = None
        tty = (stream or sys.stdout).isatty()
        self.rich = False
        if not json_mode and tty:
            try:
                import rich.console
            except ImportError:  # pragma: no cover - the cli extra is missing
                pass
            else:
                self.rich = True
                self._console = rich.console.Console(file=stream, highlight=False, emoji=False)
        if sys.stderr.isatty():
            try:
                import rich.console
            except ImportError:  # pragma: no cover
                pass
            else:
                self.err_console = rich.console.Console(stderr=True, highlight=False, emoji=False)

    @property
    def stream(self) -> TextIO:
        """The result stream now (stdout may be patched by the interactive mode)."""
        return self._stream or sys.stdout

    # -- primitives ------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except BrokenPipeError:
            raise StdoutClosed from None

    def line(self, text: str = "", style: str | None = None) -> None:
        """Print one line of human output (styled on a terminal; server text neutralised)."""
        text = for_terminal(text)
        if self._console is not None:
            try:
                self._console.print(
                    text, style=style, markup=False, highlight=False, soft_wrap=True
                )
            except BrokenPipeError:
                raise StdoutClosed from None
        else:
            self._write(text)

    def note(self, text: str, style: str | None = "dim") -> None:
        """Print a side note (notifications, progress text) to stderr (neutralised)."""
        text = for_terminal(text)
        if self.err_console is not None:
            self.err_console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=sys.stderr, flush=True)

    def json(self, value: Any) -> None:
        """Print one JSON document, exactly (JSON escapes control characters itself)."""
        self._write(json_for_terminal(value, indent=2))

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Print a table (rich) or aligned columns (plain); every cell neutralised.

        Cells are one line each (a line break shows as ``\\n``), except the last column
        (descriptions), which keeps its line breaks on a terminal.
        """
        last = len(columns) - 1
        safe = [
            [
                for_terminal(cell, newlines=i == last and self._console is not None)
                for i, cell in enumerate(row)
            ]
            for row in rows
        ]
        if self._console is not None:
            import rich.table
            from rich.text import Text

            table = rich.table.Table(
                title=Text(for_terminal(title, newlines=False)),
                title_justify="left",
                show_lines=False,
            )
            for i, name in enumerate(columns):
                table.add_column(
                    Text(for_terminal(name, newlines=False)),
                    style="bold cyan" if i == 0 else None,
                    overflow="fold",
                )
            for row in safe:
                table.add_row(*(Text(cell) for cell in row))
            try:
                self._console.print(table)
            except BrokenPipeError:
                raise StdoutClosed from None
            return
        if not safe:
            self.line(f"(no {title.lower()})")
            return
        widths = [max(len(c), *(len(r[i]) for r in safe)) for i, c in enumerate(columns[:-1])]
        for row in safe:
            cells = [row[i].ljust(widths[i]) for i in range(len(widths))]
            self.line("  ".join([*cells, row[-1]]).rstrip())

    # -- results ---------------------------------------------------------------------------

    def tool_result(self, result: t.CallToolResult) -> None:
        """Render a tool result by content type; ``isError`` highlighted."""
        if self.json_mode:
            self.json(to_plain(result))
            return
        if result.is_error:
            self.line("Tool error:", "bold red")
        for block in result.content:
            text, style = describe_block(block)
            self.line(text, "red" if result.is_error else style)
        structured: Any = result.structured_content
        if structured is not UNSET and structured is not None:
            text_blocks = [b.text for b in result.content if isinstance(b, t.TextContent)]
            dumped = json.dumps(structured, ensure_ascii=False)
            if text_blocks != [dumped] and not self._same_json(text_blocks, structured):
                self.line("structured content:", "bold")
                self.line(json.dumps(structured, indent=2, ensure_ascii=False), "green")

    @staticmethod
    def _same_json(texts: list[str], value: Any) -> bool:
        if len(texts) != 1:
            return False
        try:
            return bool(json.loads(texts[0]) == value)
        except ValueError:
            return False

    def read_result(self, result: t.ReadResourceResult) -> None:
        """Render the contents of a read resource."""
        if self.json_mode:
            self.json(to_plain(result))
            return
        for item in result.contents:
            mime = _text(getattr(item, "mime_type", None))
            if isinstance(item, t.TextResourceContents):
                if len(result.contents) > 1:
                    self.line(f"── {item.uri}" + (f" ({mime})" if mime else ""), "bold")
                self.line(item.text)
            else:
                blob = str(getattr(item, "blob", ""))
                self.line(f"[{item.uri}: {mime or 'binary'}, {_size(blob)}]", "magenta")

    def prompt_result(self, result: t.GetPromptResult) -> None:
        """Render a prompt's messages."""
        if self.json_mode:
            self.json(to_plain(result))
            return
        if isinstance(result.description, str):
            self.line(result.description, "italic")
        for message in result.messages:
            text, style = describe_block(message.content)
            self.line(f"{message.role}:", "bold")
            self.line(f"  {text}", style)

    def error(self, text: str) -> None:
        """Print an error line for people to stderr (server text neutralised)."""
        text = for_terminal(text)
        if self.err_console is not None:
            self.err_console.print(
                f"trio-mcp: {text}", style="bold red", markup=False, highlight=False
            )
        else:
            print(f"trio-mcp: {text}", file=sys.stderr, flush=True)

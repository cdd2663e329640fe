"""Printing for people (tables and colour with rich on a terminal) and for scripts (``--json``).

Every line for a person goes through `Output`, and `Output` passes every string
through [`trio_mcp.for_terminal()`][trio_mcp.for_terminal] and never lets rich parse markup: the
CLI's own words hold no control character, so neutralising the whole line costs nothing and no
server text can slip past. ``--json`` documents are written exactly as they are.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from msgspec import UNSET

from .. import types as t
from .._terminal import for_terminal, json_for_terminal
from ._args import as_mapping

if TYPE_CHECKING:
    from ._layout import Entry

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

    def wrapped(self, text: str, style: str | None = None, *, indent: int = 0) -> None:
        """Print text wrapped at spaces to the terminal's width (neutralised).

        Each line of ``text`` is wrapped; continuation lines are indented by ``indent``.
        Piped, the text is printed as is.
        """
        if self._console is None:
            self.line(text, style)
            return
        from ._layout import wrap_text

        for paragraph in for_terminal(text).split("\n"):
            for part in wrap_text(paragraph, self._console.width, indent):
                self.line(part, style)

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

    @property
    def width(self) -> int | None:
        """The terminal's width in cells, or None when results do not go to a terminal."""
        return int(self._console.width) if self._console is not None else None

    def listing(
        self,
        title: str,
        entries: Sequence[Entry],
        *,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        full: bool = False,
        more: str = "",
    ) -> None:
        """Print a list: one block per item on a terminal, aligned columns when piped.

        On a terminal identifiers (tool names, URIs) are never split and every line fits
        its width (`_layout.layout`); descriptions are shortened to
        two lines unless ``full``, and then a last line says ``more`` (how to see them
        whole). Piped, ``columns`` and ``rows`` print one line per item, as before.
        """
        if self._console is None:
            self.table(title, columns, rows)
            return
        from rich.text import Text

        from ._layout import layout

        lines, shortened = layout(entries, self._console.width, full=full)
        header = f"{title} ({len(entries)})" if entries else f"{title}: none"
        try:
            self._console.print(Text(header, style="bold"), soft_wrap=True)
            for line in lines:
                self._console.print(
                    Text.assemble(*((t, st or "") for t, st in line)), soft_wrap=True
                )
            if shortened and more:
                self._console.print(Text(for_terminal(more), style="dim"))
        except BrokenPipeError:
            raise StdoutClosed from None

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

"""Lists for a terminal of any width: one block per item, identifiers never split.

A tool name or a resource URI is what a person copies into the next command, so it is
never wrapped mid-word: each item starts on its own line with its identifier whole, then
its arguments (each argument's name whole too), then its description, indented, wrapped
at spaces and, unless ``full``, shortened to a couple of lines. Every line fits the
width; the only exception is an identifier wider than the whole line, which is printed
whole on its own line (the terminal wraps it, and copying it still gives it whole).

Pure functions over text (no I/O): `layout` is tested with hypothesis over any
width, name and description, hostile ones included. Every string passes through
[`for_terminal`][trio_mcp.for_terminal] here, so callers hand over server text as is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .._terminal import for_terminal

try:
    from rich.cells import cell_len
except ImportError:  # pragma: no cover - the cli extra is missing: plain output uses no layout
    import unicodedata

    def cell_len(text: str, unicode_version: str = "auto") -> int:
        """Cells ``text`` takes on a terminal (wide characters 2, combining ones 0)."""
        return sum(
            0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
            for c in text
        )


__all__ = ["ELLIPSIS", "Entry", "Line", "Span", "layout", "one_line", "wrap_text"]

Span = tuple[str, str | None]
"""One piece of a line: its text and its style (a rich style name, or None)."""
Line = tuple[Span, ...]
"""One printed line."""

ELLIPSIS = "…"
"""Marks text cut short."""

_NAME_STYLE = "bold cyan"
_ARG_STYLE = "cyan"
_DETAIL_STYLE = "dim"
_INDENT = 2  # description and detail lines
_ARG_INDENT = 4  # argument lines below the name
_SHORT_SUFFIX = 30  # cells kept of an argument's type and default unless ``full``
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Entry:
    """One item of a list (a tool, resource, template or prompt), as the server gave it.

    Attributes:
        name: The identifier (tool name, URI): never split.
        arguments: ``(name, rest)`` pairs such as ``("a", ": number*")``: the name is never
            split; ``rest`` is shortened unless ``full``.
        detail: A short line under the name (a resource's name and type).
        description: Prose, wrapped at spaces.
    """

    name: str
    arguments: Sequence[tuple[str, str]] = field(default_factory=tuple[tuple[str, str], ...])
    detail: str = ""
    description: str = ""


def one_line(text: str) -> str:
    """``text`` neutralised for one line of a terminal (a tab shows as ``\\t`` too)."""
    return for_terminal(text, newlines=False).replace("\t", "\\t")


def _prose(text: str) -> str:
    """Prose on one line: neutralised, every run of whitespace one space."""
    return _SPACES.sub(" ", for_terminal(text, newlines=False).replace("\\n", " ")).strip()


def _cut(text: str, cells: int) -> str:
    """The longest start of ``text`` at most ``cells`` wide."""
    if cell_len(text) <= cells:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits (cell_len grows with the prefix)
        mid = (low + high + 1) // 2
        if cell_len(text[:mid]) <= cells:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _shorten(text: str, cells: int) -> str:
    """``text``, cut to ``cells`` with an ellipsis when it is wider."""
    if cell_len(text) <= cells:
        return text
    return _cut(text, max(cells - 1, 0)).rstrip() + ELLIPSIS


def _fold(word: str, cells: int) -> list[str]:
    """A word wider than the line, cut into pieces that fit (prose only, never a name)."""
    pieces: list[str] = []
    while cell_len(word) > cells:
        piece = _cut(word, cells) or word[:1]
        pieces.append(piece)
        word = word[len(piece) :]
    if word:
        pieces.append(word)
    return pieces


def _wrap(text: str, cells: int) -> list[str]:
    """Prose wrapped at spaces to ``cells``; a word wider than a line is folded."""
    cells = max(cells, 1)
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        if not word:
            continue
        candidate = f"{current} {word}" if current else word
        if cell_len(candidate) <= cells:
            current = candidate
            continue
        if current:
            lines.append(current)
        pieces = _fold(word, cells)
        lines += pieces[:-1]
        current = pieces[-1]
    if current:
        lines.append(current)
    return lines


def _wrap_choices(text: str, cells: int) -> list[str]:
    """Like `_wrap`, and a line may also end after a ``|`` (``"a"|"b"|"c"``)."""
    cells = max(cells, 1)
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        fragments = re.split(r"(?<=\|)", word)
        for j, fragment in enumerate(fragments):
            if not fragment:
                continue
            joined = fragment if j or not current else " " + fragment
            if cell_len(current + joined) <= cells:
                current += joined
                continue
            if current:
                lines.append(current)
            pieces = _fold(fragment, cells)
            lines += pieces[:-1]
            current = pieces[-1]
    if current:
        lines.append(current)
    return lines


def _paragraphs(text: str, cells: int, limit: int | None) -> tuple[list[str], bool]:
    """Prose lines of ``text`` at ``cells``; at most ``limit`` lines (then shortened)."""
    if limit is None:
        out: list[str] = []
        for paragraph in for_terminal(text).split("\n"):
            out += _wrap(_prose(paragraph), cells)
        return out, False
    lines = _wrap(_prose(text), cells)
    if len(lines) <= limit:
        return lines, False
    kept = lines[:limit]
    kept[-1] = _shorten(kept[-1] + " " + ELLIPSIS, cells)
    if not kept[-1].endswith(ELLIPSIS):  # pragma: no cover - _shorten always marks a cut
        kept[-1] = _cut(kept[-1], cells - 1) + ELLIPSIS
    return kept, True


def _shorten_rest(rest: str) -> str:
    """An argument's ``: type* = default``, each part shortened, the ``*`` (required) kept."""
    kind, sep, default = rest.partition(" = ")
    star = "*" if kind.endswith("*") else ""
    kind = _shorten(kind.removesuffix("*"), _SHORT_SUFFIX * 2 // 3) + star
    if sep:
        default = _shorten(default, _SHORT_SUFFIX // 2)
    return kind + sep + default


def _argument_lines(
    head: str, arguments: Sequence[tuple[str, str]], width: int, full: bool
) -> tuple[list[Line], bool]:
    """The name's line with as many arguments as fit after it, then the rest below."""
    shortened = False
    atoms: list[tuple[str, str]] = []
    for i, (name, rest) in enumerate(arguments):
        rest = one_line(rest)
        if not full and cell_len(rest) > _SHORT_SUFFIX:
            rest = _shorten_rest(rest)
            shortened = True
        atoms.append((one_line(name), rest + ("," if i < len(arguments) - 1 else "")))
    lines: list[Line] = []
    line: list[Span] = [(head, _NAME_STYLE)]
    used = cell_len(head)
    after_name = True  # the next argument comes right after the name (two spaces)
    for name, rest in atoms:
        size = cell_len(name) + cell_len(rest)
        gap = 2 if after_name else 1
        if used + gap + size <= width:
            line += [(" " * gap, None), (name, _ARG_STYLE), (rest, None)]
            used += gap + size
            after_name = False
            continue
        lines.append(tuple(line))
        after_name = False
        line = [(" " * _ARG_INDENT, None), (name, _ARG_STYLE)]
        used = _ARG_INDENT + cell_len(name)
        if used + cell_len(rest) <= width:
            line.append((rest, None))
            used += cell_len(rest)
            continue
        # The argument alone is wider than a line: its name stays whole, the rest wraps
        # below it (at spaces, or after a "|" of a list of choices).
        lines.append(tuple(line))
        room = max(width - _ARG_INDENT - 2, 1)
        pieces = _wrap_choices(rest, room)
        for piece in pieces[:-1]:
            lines.append(((" " * (_ARG_INDENT + 2), None), (piece, None)))
        last = pieces[-1] if pieces else ""
        line = [(" " * (_ARG_INDENT + 2), None), (last, None)]
        used = _ARG_INDENT + 2 + cell_len(last)
    lines.append(tuple(line))
    return lines, shortened


def wrap_text(text: str, width: int, indent: int = 0) -> list[str]:
    """One line of text (neutralised) wrapped at spaces to ``width``.

    The first line keeps its leading spaces; the next ones are indented by ``indent``.
    A word wider than a line is folded.
    """
    text = one_line(text)
    lead = len(text) - len(text.lstrip(" "))
    body = _wrap(text[lead:], max(width - lead, 1))
    if not body:
        return [text]
    out = [" " * lead + body[0]]
    rest = " ".join(body[1:])
    if rest:
        out += [" " * indent + line for line in _wrap(rest, max(width - indent, 1))]
    return out


def layout(
    entries: Sequence[Entry], width: int, *, full: bool = False, description_lines: int = 2
) -> tuple[list[Line], bool]:
    """Lay out a list for a terminal ``width`` cells wide.

    Args:
        entries: The items, with server text as the server sent it.
        width: The terminal's width in cells.
        full: Show every description and argument whole (no shortening).
        description_lines: Lines kept of a description unless ``full``.

    Returns:
        The lines, and whether anything was shortened (then say how to see it whole).
    """
    width = max(width, 1)
    lines: list[Line] = []
    shortened = False
    limit = None if full else description_lines
    for entry in entries:
        head, cut = _argument_lines(one_line(entry.name), entry.arguments, width, full)
        lines += head
        shortened |= cut
        if entry.detail:
            detail, cut = _paragraphs(entry.detail, width - _INDENT, None if full else 1)
            lines += [((" " * _INDENT, None), (text, _DETAIL_STYLE)) for text in detail]
            shortened |= cut
        if entry.description:
            body, cut = _paragraphs(entry.description, width - _INDENT, limit)
            lines += [((" " * _INDENT, None), (text, None)) for text in body]
            shortened |= cut
    return lines, shortened

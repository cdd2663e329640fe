"""Searching a large tool catalogue: a lowercase index per tool, ranked matches, in milliseconds.

A server (or a group) with thousands of tools cannot hand them all to a model. A
[`ToolIndex`][trio_mcp.agent.ToolIndex] is built once per listing (each tool's name, title,
description and argument names, lowercased and split into words: about 2 µs per tool) and answers a
search by scanning one precomputed string per tool for each query word (a C-level substring
test), scoring only the tools that match: 10,000 tools in a few milliseconds
(``bench/toolsearch.py``). Pure: no I/O, no trio.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, cast

from . import types as t

__all__ = ["ToolIndex"]

_WORD: Final = re.compile(r"[a-z0-9]+")
_CAMEL: Final = re.compile(r"([a-z0-9])(?=[A-Z])")
_SEPARATOR: Final = "\x00"
_STOP_WORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "the",
        "to",
        "with",
    ]
)
"""Words a query may hold that say nothing about a tool (dropped unless nothing else is left)."""
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")

# Points per query word, by where it is found: as a whole word, or as part of one.
_NAME_EXACT: Final = 100  # the whole query is the tool's name
_NAME: Final = (30, 20)
_TITLE: Final = (15, 10)
_ARGUMENTS: Final = (8, 5)
_DESCRIPTION: Final = (4, 2)


def _argument_names(tool: t.Tool) -> str:
    properties: object = tool.input_schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    names: list[Any] = list(cast("dict[Any, Any]", properties))  # type: ignore[redundant-cast]
    return " ".join(name for name in names if isinstance(name, str))


class _Field:
    """One field of every tool, lowercased (camelCase split) in one string, and where each
    tool's part starts: a word is found in all tools at once by a C-level scan."""

    __slots__ = ("points", "starts", "text")

    def __init__(self, values: Iterable[str], points: tuple[int, int], *, names: bool) -> None:
        # (no separator can come from a value: they are stripped of it first)
        joined = _SEPARATOR.join(value.replace(_SEPARATOR, " ") for value in values)
        # names and argument names: getWeather is the words get and weather
        self.text = (_CAMEL.sub(r"\1 ", joined) if names else joined).lower()
        self.starts = [0, *(match.end() for match in re.finditer(_SEPARATOR, self.text))]
        self.points = points

    def add(self, word: str, scores: dict[int, int]) -> None:
        """Add this field's points for ``word`` to each tool's score (its best hit only)."""
        text, starts = self.text, self.starts
        whole, part = self.points
        best: dict[int, int] = {}
        size = len(word)
        at = text.find(word)
        while at != -1:
            position = bisect.bisect_right(starts, at) - 1
            end = at + size
            is_word = (at == 0 or text[at - 1] not in _ALNUM) and (
                end == len(text) or text[end] not in _ALNUM
            )
            points = whole if is_word else part
            if points > best.get(position, 0):
                best[position] = points
            at = text.find(word, end)
        for position, points in best.items():
            scores[position] = scores.get(position, 0) + points


class ToolIndex:
    """A search index over a list of tools: ranked matches by name, title, description, arguments.

    Build one per listing (it keeps the tools as given) and search it as often as needed;
    the result is a list of the tools themselves, ready to hand to a model. Each word of the
    query scores where it is found: the whole name (100), a word of the name (30) or part
    of it (20), the title (15 or 10), an argument name (8 or 5), the description (4 or 2);
    a tool's score is the sum over the query's words, ties keep the listing's order.

    Cost: building is about 2 µs per tool; a search scans one string per tool per query
    word, then scores only the tools that contain it: a few milliseconds for 10,000 tools
    (``bench/toolsearch.py``).

    Args:
        tools: The tools to index, e.g. ``await session.list_tools()``.
    """

    __slots__ = ("_fields", "_names", "tools")

    def __init__(self, tools: Iterable[t.Tool]) -> None:
        self.tools: tuple[t.Tool, ...] = tuple(tools)
        """The tools indexed, in the order given."""
        listed = self.tools
        self._names: dict[str, list[int]] = {}
        for position, tool in enumerate(listed):
            self._names.setdefault(tool.name.lower(), []).append(position)
        self._fields = (
            _Field((tool.name for tool in listed), _NAME, names=True),
            _Field(
                (tool.title if isinstance(tool.title, str) else "" for tool in listed),
                _TITLE,
                names=False,
            ),
            _Field((_argument_names(tool) for tool in listed), _ARGUMENTS, names=True),
            _Field(
                (tool.description if isinstance(tool.description, str) else "" for tool in listed),
                _DESCRIPTION,
                names=False,
            ),
        )

    def __len__(self) -> int:
        return len(self.tools)

    def search(self, query: str, *, limit: int | None = None) -> list[t.Tool]:
        """The tools that match ``query``, best first.

        Args:
            query: Words to look for (any case; punctuation separates words). An empty
                query matches every tool, in the listing's order.
            limit: At most this many tools (None: every match).

        Returns:
            The matching tools, best first.

        Raises:
            ValueError: ``limit`` is negative.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, not {limit}")
        words = list(dict.fromkeys(_WORD.findall(_CAMEL.sub(r"\1 ", query).lower())))
        words = [word for word in words if word not in _STOP_WORDS] or words
        if not words:
            return list(self.tools[:limit] if limit is not None else self.tools)
        scores: dict[int, int] = {}
        for position in self._names.get(query.strip().lower(), ()):
            scores[position] = _NAME_EXACT
        for word in words:
            for field in self._fields:
                field.add(word, scores)
        pairs = ((-score, position) for position, score in scores.items())
        ranked: Sequence[tuple[int, int]] = (
            heapq.nsmallest(limit, pairs) if limit is not None else sorted(pairs)
        )
        return [self.tools[position] for _, position in ranked]

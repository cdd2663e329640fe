"""trio_mcp.cli._layout: lists at any terminal width, identifiers never split (issue 36)."""

from __future__ import annotations

import io
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rich")

from rich.cells import cell_len
from rich.console import Console

from trio_mcp import for_terminal
from trio_mcp.cli._layout import ELLIPSIS, Entry, Line, layout, one_line, wrap_text
from trio_mcp.cli._output import Output

EXAMPLES = int(os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", "200"))

# What a terminal acts on (see tests/test_terminal.py): none may reach it.
DANGEROUS = {chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}
DANGEROUS |= set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
DANGEROUS |= {"\u2028", "\u2029"}

HOSTILE = ["\x1b[2J", "\x1b]8;;https://x\x1b\\", "\u202e", "\u2066", "\t", "\n", "\x9b", "\x07"]

# Identifiers as servers write them: words with -_./:{} and, sometimes, hostile bytes,
# wide characters and combining marks.
_piece = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_./:{}0123456789", min_size=1, max_size=30),
    st.sampled_from(HOSTILE),
    st.text(alphabet="界語🎉é", min_size=1, max_size=4),
    st.text(min_size=1, max_size=6),
)
names = st.lists(_piece, min_size=1, max_size=5).map("".join)
prose = st.lists(st.one_of(_piece, st.just(" "), st.just("\n")), max_size=40).map("".join)
arguments = st.lists(
    st.tuples(names, st.one_of(st.just(": string*"), prose.map(lambda p: ": " + p))),
    max_size=5,
)
entries = st.lists(
    st.builds(Entry, names, arguments, st.one_of(st.just(""), prose), prose), max_size=6
)


def text_of(line: Line) -> str:
    return "".join(text for text, _ in line)


def check(items: list[Entry], width: int, full: bool) -> list[Line]:
    lines, _ = layout(items, width, full=full)
    for line in lines:
        text = text_of(line)
        assert not DANGEROUS & set(text), text
        if cell_len(text) > width:
            # Only an identifier wider than the whole line may overflow it, alone on its line.
            spans = [span for span in line if span[0].strip()]
            assert len(spans) == 1 and spans[0][1] in ("bold cyan", "cyan"), line
    spans = [span for line in lines for span in line]
    for item in items:
        assert (one_line(item.name), "bold cyan") in spans  # the name whole, in one span
        for name, _ in item.arguments:
            assert (one_line(name), "cyan") in spans  # each argument's name whole
    heads = [line[0][0] for line in lines if line[0][1] == "bold cyan"]
    assert heads == [one_line(item.name) for item in items]  # each name starts its line
    return lines


@settings(max_examples=EXAMPLES, deadline=None)
@given(entries, st.integers(40, 200), st.booleans())
def test_no_identifier_split_and_no_line_over_the_width(
    items: list[Entry], width: int, full: bool
) -> None:
    check(items, width, full)


@settings(max_examples=EXAMPLES, deadline=None)
@given(entries, st.integers(40, 200))
def test_full_shows_every_word_of_the_description(items: list[Entry], width: int) -> None:
    lines, shortened = layout(items, width, full=True)
    assert not shortened
    shown = " ".join(text_of(line) for line in lines)
    for item in items:
        for word in for_terminal(item.description, newlines=False).replace("\\n", " ").split():
            if cell_len(word) <= width - 2:  # (wider words are folded)
                assert word in shown


def test_the_tools_of_server_everything_at_80_columns() -> None:
    tools = [
        Entry("echo", [("message", ": string*")], description="Echoes back the input string"),
        Entry(
            "gzip-file-as-resource",
            [
                ("name", ': string = "README.md.gz"'),
                ("data", ': string = "https://raw.githubusercontent.com/x/y/refs/heads/README.md"'),
                ("outputType", ': "resourceLink"|"resource" = "resourceLink"'),
            ],
            description="Compresses a single file using gzip compression. " * 4,
        ),
        Entry("toggle-simulated-logging", description="Toggles simulated logging on or off."),
        Entry(
            "get-structured-content",
            [("location", ': "New York"|"Chicago"|"Los Angeles"*')],
            description="Returns structured content",
        ),
    ]
    lines, shortened = layout(tools, 80)
    texts = [text_of(line) for line in lines]
    assert texts[0] == "echo  message: string*"
    assert "toggle-simulated-logging" in texts  # whole, on its own line
    assert shortened
    assert any(text.endswith(ELLIPSIS) for text in texts)
    assert max(cell_len(text) for text in texts) <= 80
    assert len(texts) == 11  # 2 to 5 lines per tool (the old table: 4 to 14 lines each)
    assert any(
        t.startswith("get-structured-content  location: ") and t.endswith("*") for t in texts
    )


def test_a_name_wider_than_the_line_is_printed_whole() -> None:
    name = "x" * 60
    lines, _ = layout([Entry(name, [("y" * 50, ": string")], description="d")], 40)
    assert [text_of(line) for line in lines][:3] == [name, "    " + "y" * 50, "      : string"]


def test_output_prints_blocks_on_a_terminal_and_columns_when_piped() -> None:
    out = Output(json_mode=False, stream=io.StringIO())
    out._console = Console(file=io.StringIO(), width=50, force_terminal=True, color_system=None)
    entry = Entry("a-tool-with-a-long-name", [("x", ": string*")], description="word " * 40)
    out.listing("Tools", [entry], columns=["Name", "Description"], rows=[], more="see --full")
    text = out._console.file.getvalue()
    assert text.splitlines()[:2] == ["Tools (1)", "a-tool-with-a-long-name  x: string*"]
    assert text.splitlines()[-1] == "see --full"
    assert max(cell_len(line) for line in text.splitlines()) <= 50
    piped = io.StringIO()
    plain = Output(json_mode=False, stream=piped)
    plain.listing("Tools", [entry], columns=["Name", "D"], rows=[["a-tool-with-a-long-name", "d"]])
    assert piped.getvalue() == "a-tool-with-a-long-name  d\n"


def _ascii_words(text: str) -> list[str]:
    return [word for word in re.split(r"[ \t\n\r\x0b\x0c]+", text) if word]


@settings(max_examples=EXAMPLES, deadline=None)
@given(prose, st.integers(40, 200), st.integers(0, 8))
def test_wrapped_text_fits_and_keeps_words_whole(text: str, width: int, indent: int) -> None:
    lines = wrap_text(text, width, indent)
    for line in lines:
        assert not DANGEROUS & set(line)
        assert cell_len(line) <= width or not line.strip()
    # words are what the wrapper may break between: runs without an ASCII space (a no-break
    # space, U+00A0, joins the words around it, as it should on a terminal)
    shown = " ".join(_ascii_words(" ".join(lines)))
    for word in _ascii_words(one_line(text)):
        if cell_len(word) <= width - max(indent, len(text) - len(text.lstrip(" "))):
            assert word in shown  # a word that fits a line is never split

"""trio_mcp.for_terminal: no server string reaches a terminal with an escape sequence in it."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp import for_terminal
from trio_mcp._terminal import json_for_terminal

EXAMPLES = int(os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", "200"))

# What a terminal acts on: C0 (but tab and newline), DEL, C1, bidi controls, U+2028/9.
DANGEROUS = {chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]} - {"\t", "\n"}
DANGEROUS |= set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
DANGEROUS |= {"\u2028", "\u2029"}


def test_plain_text_is_returned_as_is() -> None:
    text = "echo — café 🎉\tcolumns\nsecond line"
    assert for_terminal(text) is text


def test_escape_sequences_are_shown_not_sent() -> None:
    clear = "\x1b[2J\x1b[H"
    title = "\x1b]0;owned\x07"
    clipboard = "\x1b]52;c;cm0gLXJmIH4=\x07"
    hyperlink = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
    out = for_terminal(clear + title + clipboard + hyperlink + "\x9b31m\x00")
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\x00" not in out
    assert out.startswith("\\x1b[2J\\x1b[H\\x1b]0;owned\\x07")
    assert out.endswith("\\x9b31m\\x00")


def test_bidi_controls_and_separators_are_neutralised() -> None:
    assert for_terminal("abc\u202edcba") == "abc\\u202edcba"
    assert for_terminal("a\u2066b\u2069c\u2028d") == "a\\u2066b\\u2069c\\u2028d"


def test_newlines_kept_or_shown() -> None:
    assert for_terminal("a\nb\r\nc") == "a\nb\\r\nc"
    assert for_terminal("a\nb", newlines=False) == "a\\nb"


def test_markup_is_left_as_plain_text() -> None:
    # Nothing is interpreted here; the CLI prints with markup off.
    assert for_terminal("[link=https://x]y[/link] [/]") == "[link=https://x]y[/link] [/]"


def test_non_strings_are_converted() -> None:
    assert for_terminal(42) == "42"


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(), st.booleans())
def test_no_generated_string_yields_a_control_character(text: str, newlines: bool) -> None:
    out = for_terminal(text, newlines=newlines)
    assert not (set(out) & DANGEROUS)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in out)
    if not newlines:
        assert "\n" not in out
    # Text without anything dangerous comes back unchanged.
    if not (set(text) & (DANGEROUS | ({"\n"} if not newlines else set()))) and not any(
        0xD800 <= ord(c) <= 0xDFFF for c in text
    ):
        assert out == text


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=EXAMPLES)
@given(JSON_VALUES, st.sampled_from([None, 2]))
def test_json_for_terminal_is_exact_and_safe(value: object, indent: int | None) -> None:
    # --json output: the very same value back, and nothing a terminal acts on (not even
    # the newline inside a string: JSON escapes it), while plain non-ASCII stays readable.
    out = json_for_terminal(value, indent=indent)
    assert json.loads(out) == value
    assert not (set(out) & (DANGEROUS - {"\n"}))
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in out)
    out.encode("utf-8")  # no lone surrogate left to break the write


def test_json_for_terminal_escapes_c1_and_bidi_keeps_other_text() -> None:
    out = json_for_terminal({"name": "a\u202eb\x9b31m\x7f é 日本"})
    assert out == '{"name": "a\\u202eb\\u009b31m\\u007f é 日本"}'

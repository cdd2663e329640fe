"""Server text made safe for a terminal: the one function every human-readable output uses.

A server controls tool names, descriptions, results, errors, prompts, resource text, its own
stderr, elicitation messages, progress messages and the URLs an authorization server hands
out. Printed raw, such a string can clear the screen, retitle the window, write the clipboard
(OSC 52), hide a hyperlink (OSC 8) or reorder the text a person reads (U+202E). Every path
that prints a peer string for a person passes it through [`for_terminal()`][trio_mcp.for_terminal]
first:

* C0 control characters (except tab and, where allowed, newline), DEL and the C1 range are
  shown visibly as ``\\xNN`` escapes, so no ESC, BEL, CSI or OSC ever reaches the terminal;
* Unicode bidirectional controls (U+061C, U+200E/F, U+202A..E, U+2066..9), the line and
  paragraph separators (U+2028/9) and lone surrogates are shown as ``\\uNNNN``;
* nothing is ever interpreted as markup: this function only returns plain text, and the
  CLI prints it with markup off (or as a ``rich.text.Text``).

``--json`` output stays exact JSON and goes through `json_for_terminal()`: JSON escapes
C0 itself, and DEL, C1, the bidi controls, U+2028/9 and lone surrogates become ``\\uNNNN``
escapes too, so the document decodes to the very same value and a terminal sees none of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["for_terminal", "json_for_terminal"]

# C0 except \t and \n, DEL, C1; bidi controls; U+2028/U+2029; lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029\ud800-\udfff]"
)
_UNSAFE_ONE_LINE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def for_terminal(text: object, *, newlines: bool = True) -> str:
    """Return ``text`` with everything a terminal would act on shown visibly instead.

    Use it on every string a server (or an authorization server) controls before printing it
    for a person: control characters and escape sequences become visible ``\\xNN`` escapes,
    bidirectional controls ``\\uNNNN``. The result holds no ESC, BEL or C1 character.

    Args:
        text: The string to print (anything else is converted with ``str()`` first).
        newlines: Keep line breaks (multi-line results); ``False`` shows them as ``\\n`` too,
            for one-line places such as table cells, titles and progress lines.

    Returns:
        Plain text, safe to write to a terminal. Print it with markup interpretation off.
    """
    string = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE if newlines else _UNSAFE_ONE_LINE
    if pattern.search(string) is None:  # the common case: nothing to do, no copy
        return string
    return pattern.sub(_visible, string)


# What json.dumps(ensure_ascii=False) leaves raw and a terminal would act on. Outside
# strings its output is ASCII, so these can only sit inside a string, where \uNNNN is exact.
_UNSAFE_IN_JSON = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_for_terminal(value: Any, *, indent: int | None = None) -> str:
    """Return ``value`` as exact JSON that is also safe to write to a terminal.

    ``json.dumps`` escapes C0 control characters but leaves DEL, C1 characters, bidi
    controls, U+2028/9 and lone surrogates raw (with ``ensure_ascii=False``); here they
    become ``\\uNNNN`` escapes, so ``json.loads`` of the result is exactly ``value`` and
    other non-ASCII text stays readable.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if _UNSAFE_IN_JSON.search(text) is None:
        return text
    return _UNSAFE_IN_JSON.sub(_json_escape, text)

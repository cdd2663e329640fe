"""JSONC: turn JSON with comments and trailing commas (as VS Code writes it) into JSON.

One job: `strip_jsonc()`, linear in the size of the input and with a bounded nesting
depth (``MAX_DEPTH``), so a hostile file costs time in proportion to its size. Comments
become spaces and newlines stay, so every byte offset and line number the JSON decoder
reports is the input's (`line_col()` turns an offset into a line and column).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["BYTE_POSITION", "MAX_DEPTH", "line_col", "strip_jsonc"]

# Two linear passes over the bytes. The first blanks comments (a comment becomes spaces,
# its newlines stay, so every byte offset and line number of the result is the input's);
# the second drops trailing commas and bounds the nesting depth. Each pass jumps from one
# interesting byte to the next with a compiled search and never looks back, so a hostile
# file costs time in proportion to its size (the old regular expression was quadratic on
# unterminated strings full of escaped quotes: hours for a mebibyte).
BYTE_POSITION: Final = re.compile(r"\(byte (\d+)\)")
_SPECIAL: Final = re.compile(rb'["/]')
_IN_STRING: Final = re.compile(rb'["\\\n]')
_STRUCTURE: Final = re.compile(rb'["\[\]{},]')
_NOT_SPACE: Final = re.compile(rb"[^ \t\r\n]")
_NOT_NEWLINE: Final = re.compile(rb"[^\n]")

MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects a config file may have."""


def _string_end(data: bytes | bytearray, start: int) -> int:
    """The offset just past the string opening at ``start`` (at a newline if unclosed)."""
    position = start + 1
    while True:
        found = _IN_STRING.search(data, position)
        if found is None:
            return len(data)
        char = data[found.start()]
        if char == 0x5C:  # backslash: skip the escaped byte
            position = found.start() + 2
            continue
        if char == 0x22:
            return found.start() + 1
        return found.start()  # a raw newline: JSON strings have none; msgspec will say so


def _blank_comments(data: bytes) -> bytearray:
    out = bytearray(data)
    position = 0
    while True:
        found = _SPECIAL.search(data, position)
        if found is None:
            return out
        start = found.start()
        if data[start] == 0x22:
            position = _string_end(data, start)
            continue
        follower = data[start + 1 : start + 2]
        if follower == b"/":
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
        elif follower == b"*":
            close = data.find(b"*/", start + 2)
            if close < 0:
                raise ValueError(f"unterminated /* comment (byte {start})")
            end = close + 2
        else:
            position = start + 1
            continue
        out[start:end] = _NOT_NEWLINE.sub(b" ", data[start:end])
        position = end


def _drop_trailing_commas(out: bytearray, max_depth: int) -> None:
    depth = 0
    position = 0
    while True:
        found = _STRUCTURE.search(out, position)
        if found is None:
            return
        start = found.start()
        char = out[start]
        position = start + 1
        if char == 0x22:
            position = _string_end(out, start)
        elif char in b"[{":
            depth += 1
            if depth > max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels (byte {start})")
        elif char in b"]}":
            depth -= 1
        else:  # a comma: drop it when only space separates it from a closing bracket
            following = _NOT_SPACE.search(out, position)
            if following is not None and out[following.start()] in b"]}":
                out[start] = 0x20


def strip_jsonc(data: bytes, *, max_depth: int = MAX_DEPTH) -> bytes:
    """Turn JSONC (JSON with comments and trailing commas) into plain JSON.

    Comments and trailing commas become spaces (newlines stay), so byte offsets and line
    numbers in the result are those of the input. Strings are never touched, URLs with
    ``//`` inside them included. The work is linear in the size of the input.

    Args:
        data: The document, UTF-8.
        max_depth: The deepest nesting of arrays and objects accepted.

    Returns:
        The same document as strict JSON (if it was valid JSONC).

    Raises:
        ValueError: A ``/*`` comment is never closed, or the document is nested deeper
            than ``max_depth`` (the message gives the byte offset).
    """
    out = _blank_comments(bytes(data))
    _drop_trailing_commas(out, max_depth)
    return bytes(out)


def line_col(data: bytes, offset: int) -> tuple[int, int]:
    """The 1-based line and column of byte ``offset`` of ``data`` (clamped to its size)."""
    offset = max(0, min(offset, len(data)))
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column

"""JSON peeking: what routing needs from a JSON-RPC message, without a full decode.

Both HTTP transports (Streamable HTTP and the deprecated HTTP+SSE) route every message
they read through here: `split_batch()` splits a batch, `routed()` decodes a
message once for the session and says which request it answers, `peek()` salvages
the ``id`` and ``method`` of a message that does not decode, and
`oversized_response_id()` finds which request an oversized message answers from its
first bytes. Pure and I/O free.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeAlias, cast

import msgspec
from msgspec import UNSET

from .._exceptions import ProtocolError
from .._jsonrpc import UNDECODABLE, Envelope, decode_envelope
from ._base import MessageInfo

__all__ = [
    "infer_info",
    "oversized_response_id",
    "peek",
    "response_id",
    "routed",
    "same_id",
    "split_batch",
]

RequestId: TypeAlias = "int | str"


class _Peek(msgspec.Struct):
    """The members of a JSON-RPC message that routing needs."""

    id: Any = None
    method: Any = None
    error: msgspec.Raw = msgspec.Raw()  # left undecoded: only its presence matters


_peek_decoder: Final = msgspec.json.Decoder(_Peek)
_batch_decoder: Final = msgspec.json.Decoder(list[msgspec.Raw])


def split_batch(data: bytes) -> list[bytes]:
    """Split a JSON-RPC batch (a JSON array, 2025-03-26) into single messages.

    Args:
        data: One message or a batch, as received.

    Returns:
        The messages; ``[data]`` when it is not a batch (or not JSON: the session reports
        the undecodable message), ``[]`` for blank data.
    """
    stripped = data.lstrip()
    if not stripped:
        return []
    if stripped[:1] != b"[":
        return [data]
    try:
        return [bytes(raw) for raw in _batch_decoder.decode(data)]
    except UNDECODABLE:
        return [data]


def peek(data: bytes) -> _Peek:
    """Decode the routing members of one message (all ``None`` if it is not JSON)."""
    try:
        return _peek_decoder.decode(data)
    except UNDECODABLE:
        return _Peek()


def same_id(a: object, b: object) -> bool:
    """Whether two JSON-RPC ids are equal (``1`` and ``"1"`` are not, nor ``1`` and ``True``)."""
    return type(a) is type(b) and a == b


def routed(data: bytes) -> tuple[Envelope | None, RequestId | None]:
    """Decode one message once, for the session, and say which request it answers.

    The envelope goes to the session with the bytes, so a message is decoded once however
    it is routed. A message that does not decode is passed on as bytes (the session reports
    it); its id, if one can be salvaged, still routes it.

    Returns:
        ``(envelope, answered)``: the envelope (None if the bytes are not a valid JSON-RPC
        message) and the id of the request it is the response to (None if it is not one).
    """
    try:
        message = decode_envelope(data)
    except ProtocolError:
        return None, response_id(data)
    request_id = message.id
    if message.method is not UNSET or type(request_id) not in (int, str):
        return message, None
    return message, cast("RequestId", request_id)


def response_id(data: bytes) -> RequestId | None:
    """The id of the request ``data`` answers, or ``None`` if it is not a response."""
    message = peek(data)
    request_id: object = message.id
    if message.method is not None or not isinstance(request_id, (int, str)):
        return None
    if isinstance(request_id, bool):
        return None
    return request_id


_JSON_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"')
_JSON_SCALAR: Final = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_JSON_SPACE: Final = re.compile(rb"[ \t\r\n]*")


def _skip_space(text: bytes, pos: int) -> int:
    match = _JSON_SPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _skip_json_value(text: bytes, pos: int) -> int | None:
    """Return the end of the JSON value at ``pos``, or None if ``text`` ends first."""
    if text[pos : pos + 1] == b'"':
        match = _JSON_STRING.match(text, pos)
        return match.end() if match else None
    if text[pos : pos + 1] not in (b"{", b"["):
        match = _JSON_SCALAR.match(text, pos)
        if match is None or match.end() == len(text):
            return None  # a scalar cut by the end of the text may go on (12 -> 123)
        return match.end()
    depth = 0
    while pos < len(text):
        char = text[pos : pos + 1]
        if char == b'"':
            match = _JSON_STRING.match(text, pos)
            if match is None:
                return None
            pos = match.end()
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return None


def oversized_response_id(prefix: bytes) -> RequestId | None:
    """Find which request an oversized message answers, from its first bytes.

    Scans the top-level members of the (truncated) JSON object: it is a response when a
    ``result`` or ``error`` member starts before the prefix ends and there is no
    ``method``; its ``id`` must end before the prefix ends too.

    Args:
        prefix: The first bytes of the message.

    Returns:
        The id of the request the message answers, or ``None`` if that is not known.
    """
    found: list[RequestId] = []
    is_response = False
    pos = _skip_space(prefix, 0)
    if prefix[pos : pos + 1] != b"{":
        return None
    pos += 1
    while True:
        pos = _skip_space(prefix, pos)
        key_match = _JSON_STRING.match(prefix, pos)
        if key_match is None:
            break
        key = key_match.group()[1:-1]
        pos = _skip_space(prefix, key_match.end())
        if prefix[pos : pos + 1] != b":":
            break
        pos = _skip_space(prefix, pos + 1)
        if key == b"method":
            return None
        if key in (b"result", b"error"):
            is_response = True
        end = _skip_json_value(prefix, pos)
        if end is None:
            break
        if key == b"id":
            try:
                value: object = msgspec.json.decode(prefix[pos:end])
            except UNDECODABLE:
                return None
            if isinstance(value, (int, str)) and not isinstance(value, bool):
                found.append(value)
        pos = _skip_space(prefix, end)
        if prefix[pos : pos + 1] != b",":
            break
        pos += 1
    return found[0] if is_response and found else None


def infer_info(data: bytes) -> MessageInfo:
    """Describe a message the session sent without a
    [`MessageInfo`][trio_mcp.transports.MessageInfo].

    Args:
        data: The encoded message.
    """
    message = peek(data)
    method = message.method if isinstance(message.method, str) else None
    request_id = message.id if isinstance(message.id, (int, str)) else None
    if method is None:
        return MessageInfo(None)
    return MessageInfo(method, request_id)

"""JSON-RPC 2.0 envelopes: decode each incoming message once, encode outgoing ones fast.

Incoming messages are decoded into :class:`Envelope` with ``params`` and ``result`` kept as
:class:`msgspec.Raw`, so the payload is decoded exactly once, by the code that knows its type.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from ._exceptions import ProtocolError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Envelope",
    "ErrorObject",
    "decode_envelope",
    "encode_error_response",
    "encode_notification",
    "encode_request",
    "encode_response",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

_EMPTY_RAW: Final = msgspec.Raw()

RequestId = int | str


class ErrorObject(msgspec.Struct, omit_defaults=True):
    """The ``error`` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = None


class Envelope(msgspec.Struct):
    """One decoded JSON-RPC message; ``params``/``result`` stay raw until their type is known.

    A request has ``method`` and ``id``; a notification has ``method`` and no ``id``; a
    response has ``id`` and either ``result`` or ``error``.
    """

    jsonrpc: str | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw = _EMPTY_RAW
    result: msgspec.Raw = _EMPTY_RAW
    error: ErrorObject | UnsetType = UNSET


_envelope_decoder: Final = msgspec.json.Decoder(Envelope)


class _Request(msgspec.Struct, omit_defaults=True):
    jsonrpc: str
    id: int | str
    method: str
    params: Any = None


class _Notification(msgspec.Struct, omit_defaults=True):
    jsonrpc: str
    method: str
    params: Any = None


class _Response(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    result: Any


class _ErrorResponse(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    error: ErrorObject


def _enc_hook(obj: Any) -> Any:
    raise NotImplementedError(f"cannot encode {type(obj).__name__} as JSON")


_encoder: Final = msgspec.json.Encoder(enc_hook=_enc_hook)
encode: Final = _encoder.encode


def decode_envelope(data: bytes) -> Envelope:
    """Decode one message's envelope, validating its JSON-RPC shape.

    Raises:
        ProtocolError: The bytes are not JSON, not UTF-8, or not a JSON-RPC 2.0 message.
    """
    try:
        message = _envelope_decoder.decode(data)
    except msgspec.DecodeError as exc:
        shown = data[:200].decode("utf-8", "replace")
        raise ProtocolError(f"undecodable message from the server ({exc}): {shown!r}") from exc
    if message.jsonrpc != "2.0":
        raise ProtocolError(f"not a JSON-RPC 2.0 message (jsonrpc={message.jsonrpc!r})")
    if message.method is UNSET and message.id is UNSET:
        raise ProtocolError("JSON-RPC message with neither method nor id")
    return message


def encode_request(request_id: RequestId, method: str, params: Any = None) -> bytes:
    """Encode a request; ``params`` may be a dict, a Struct, or ``None`` (omitted)."""
    return _encoder.encode(_Request("2.0", request_id, method, params))


def encode_notification(method: str, params: Any = None) -> bytes:
    """Encode a notification; ``params`` may be a dict, a Struct, or ``None`` (omitted)."""
    return _encoder.encode(_Notification("2.0", method, params))


def encode_response(request_id: RequestId | None, result: Any) -> bytes:
    """Encode a success response."""
    return _encoder.encode(_Response("2.0", request_id, result))


def encode_error_response(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> bytes:
    """Encode an error response."""
    return _encoder.encode(_ErrorResponse("2.0", request_id, ErrorObject(code, message, data)))

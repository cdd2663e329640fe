"""JSON-RPC 2.0 envelopes, and the one trust boundary for every byte a peer sends.

Incoming messages are decoded into `Envelope` with ``params`` and ``result`` kept as
`msgspec.Raw`, so the payload is decoded exactly once, by the code that knows its type.

Every decode of peer bytes goes through this module: `decode_envelope()` (one message),
`split_batch()` (a JSON-RPC batch), `decode_payload()` (a ``params``/``result``
payload into its type) and `decode_json()` (untyped). Each returns a value or raises
[`ProtocolError`][trio_mcp.ProtocolError] chained to the cause, whatever the bytes are: invalid
JSON, invalid UTF-8 in any string, nesting deep enough to exhaust the stack, wrong types in any
field. Nothing foreign (msgspec, Unicode, Recursion errors) gets past it.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from ._exceptions import (
    HeaderMismatchError,
    MissingClientCapabilityError,
    ProtocolError,
    ResourceNotFoundError,
    ServerError,
    UnsupportedProtocolVersionError,
    URLElicitationRequiredError,
)
from .types import ElicitRequestURLParams, decoder_for

__all__ = [
    "UNDECODABLE",
    "INTERNAL_ERROR",
    "RequestId",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Envelope",
    "ErrorObject",
    "decode_envelope",
    "decode_json",
    "decode_payload",
    "is_batch",
    "salvage_head",
    "server_error_from_wire",
    "url_elicitations",
    "split_batch",
    "encode_error_response",
    "encode_notification",
    "encode_request",
    "encode_response",
]

UNDECODABLE: Final = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What msgspec raises for bytes that are not the JSON asked for: malformed or mistyped
(``DecodeError`` and its ``ValidationError``), invalid UTF-8 inside a string
(``UnicodeDecodeError``), nesting too deep (``RecursionError``). Every decode of peer bytes outside
this module catches exactly these."""

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

_EMPTY_RAW: Final = msgspec.Raw()

RequestId = int | str
T = TypeVar("T")


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
    raise TypeError(f"cannot encode a {type(obj).__name__} as JSON")


_encoder: Final = msgspec.json.Encoder(enc_hook=_enc_hook)
encode: Final = _encoder.encode


def _shown(data: bytes | msgspec.Raw) -> str:
    return bytes(data[:200]).decode("utf-8", "replace")


def decode_envelope(data: bytes) -> Envelope:
    """Decode one message's envelope, validating its JSON-RPC shape.

    A response must carry an ``id`` that is a string or an integer and exactly one of
    ``result`` and ``error``.

    Raises:
        ProtocolError: The bytes are not JSON, not UTF-8, too deeply nested, or not a
            JSON-RPC 2.0 message.
    """
    try:
        message = _envelope_decoder.decode(data)
    except Exception as exc:  # the trust boundary: msgspec, Unicode and Recursion errors
        raise ProtocolError(
            f"undecodable message from the server ({type(exc).__name__}: {exc}): {_shown(data)!r}"
        ) from exc
    if message.jsonrpc != "2.0":
        raise ProtocolError(f"not a JSON-RPC 2.0 message (jsonrpc={message.jsonrpc!r})")
    if message.method is UNSET:
        if message.id is UNSET:
            raise ProtocolError("JSON-RPC message with neither method nor id")
        if (message.error is UNSET) == (not message.result):
            raise ProtocolError(
                f"JSON-RPC response {message.id!r} must have exactly one of result and error"
            )
    return message


def is_batch(data: bytes) -> bool:
    """Whether ``data`` is a JSON array (a JSON-RPC batch) rather than one message."""
    return data.lstrip()[:1] == b"["


_batch_decoder: Final = msgspec.json.Decoder(list[msgspec.Raw])


def split_batch(data: bytes) -> list[bytes]:
    """Split a JSON-RPC batch into its messages (each still to be decoded).

    Raises:
        ProtocolError: The bytes are not a JSON array, or the array is empty.
    """
    try:
        parts = _batch_decoder.decode(data)
    except Exception as exc:
        raise ProtocolError(f"undecodable JSON-RPC batch ({exc}): {_shown(data)!r}") from exc
    if not parts:
        raise ProtocolError("empty JSON-RPC batch")
    return [bytes(part) for part in parts]


class MessageHead(msgspec.Struct):
    """What can be salvaged from a malformed message: its ``id`` and ``method``."""

    id: Any = None
    method: Any = UNSET


_head_decoder: Final = msgspec.json.Decoder(MessageHead)


def salvage_head(data: bytes) -> tuple[RequestId | None, str | None]:
    """Best effort: the usable ``id`` and ``method`` of a message that failed to decode.

    Used to fail the one request a malformed response was meant for. It scans the top
    level of the object without recursion, so nesting of any depth elsewhere does not stop
    it. Never raises.

    Returns:
        ``(id, method)``: the id is None when absent or unusable (it must be a string or a
        non-boolean integer); the method is None when the message has none (a response)
        and ``""`` when it has one that is not a usable string.
    """
    try:
        head = _head_decoder.decode(data)
        found: dict[str, Any] = {"id": head.id}
        if head.method is not UNSET:
            found["method"] = head.method
    except Exception:
        found = _scan_top_level(data, ("id", "method"))
    request_id = found.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    if "method" not in found:
        return request_id, None
    method = found["method"]
    return request_id, method if isinstance(method, str) else ""


def _scan_top_level(data: bytes, keys: tuple[str, ...]) -> dict[str, Any]:
    """The scalar values of ``keys`` at the top level of a JSON object, found iteratively."""
    found: dict[str, Any] = {}
    depth = 0
    i, n = 0, len(data)
    key: bytes | None = None
    expect_key = False
    while i < n:
        c = data[i]
        if c == 0x22:  # a string
            j = i + 1
            while j < n and data[j] != 0x22:
                j += 2 if data[j] == 0x5C else 1
            if depth == 1 and expect_key:
                key = data[i + 1 : j]
                expect_key = False
            elif depth == 1 and key is not None:
                _take(found, keys, key, data[i : j + 1])
                key = None
            i = j + 1
            continue
        if c in b"{[":
            depth += 1
            expect_key = depth == 1 and c == 0x7B
            key = None if depth > 1 else key
        elif c in b"}]":
            depth -= 1
        elif depth == 1 and c == 0x2C:  # ","
            expect_key, key = True, None
        elif depth == 1 and key is not None and c in b"-0123456789":
            j = i
            while j < n and data[j] in b"-+.eE0123456789":
                j += 1
            _take(found, keys, key, data[i:j])
            key = None
            i = j
            continue
        i += 1
    return found


def _take(found: dict[str, Any], keys: tuple[str, ...], key: bytes, value: bytes) -> None:
    try:
        name = key.decode()
    except UnicodeDecodeError:
        return
    if name in keys and name not in found:
        try:
            found[name] = _any_decoder_small.decode(value)
        except Exception:
            found[name] = _UNUSABLE


_any_decoder_small: Final = msgspec.json.Decoder()
_UNUSABLE: Final = object()


def decode_payload(raw: msgspec.Raw | bytes, tp: type[T], what: str, *, empty: bytes = b"{}") -> T:
    """Decode a ``params`` or ``result`` payload into its protocol type.

    Args:
        raw: The raw JSON payload (an empty Raw means the member was absent).
        tp: The type to decode into (Structs tolerate unknown content blocks).
        what: What the payload is, for the error message (e.g. ``"result of tools/call"``).
        empty: The JSON used when the payload is absent.

    Raises:
        ProtocolError: The payload is not valid JSON or does not match the type.
    """
    try:
        return decoder_for(tp).decode(raw if raw else empty)
    except Exception as exc:  # the trust boundary
        raise ProtocolError(f"invalid {what}: {type(exc).__name__}: {exc}") from exc


_any_decoder: Final = msgspec.json.Decoder()


def decode_json(raw: msgspec.Raw | bytes, what: str, *, empty: bytes = b"{}") -> Any:
    """Decode a payload as plain JSON (dicts, lists, scalars).

    Raises:
        ProtocolError: The payload is not valid JSON (or not UTF-8, or nested too deeply).
    """
    try:
        return _any_decoder.decode(raw if raw else empty)
    except Exception as exc:  # the trust boundary
        raise ProtocolError(f"invalid {what}: {type(exc).__name__}: {exc}") from exc


def encode_request(request_id: RequestId, method: str, params: Any = None) -> bytes:
    """Encode a request; ``params`` may be a dict, a Struct, or ``None`` (omitted).

    Raises:
        TypeError: A value in ``params`` has no JSON form.
        ValueError: ``params`` is nested too deeply or holds an unencodable string.
    """
    try:
        return _encoder.encode(_Request("2.0", request_id, method, params))
    except RecursionError as exc:
        raise ValueError(f"cannot encode the params of {method}: nested too deeply") from exc


def encode_notification(method: str, params: Any = None) -> bytes:
    """Encode a notification; ``params`` may be a dict, a Struct, or ``None`` (omitted).

    Raises:
        TypeError: A value in ``params`` has no JSON form.
        ValueError: ``params`` is nested too deeply or holds an unencodable string.
    """
    try:
        return _encoder.encode(_Notification("2.0", method, params))
    except RecursionError as exc:
        raise ValueError(f"cannot encode the params of {method}: nested too deeply") from exc


def encode_response(request_id: RequestId | None, result: Any) -> bytes:
    """Encode a success response."""
    return _encoder.encode(_Response("2.0", request_id, result))


def encode_error_response(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> bytes:
    """Encode an error response."""
    return _encoder.encode(_ErrorResponse("2.0", request_id, ErrorObject(code, message, data)))


_ERROR_CLASSES: Final[dict[int, type[ServerError]]] = {
    -32002: ResourceNotFoundError,
    -32020: HeaderMismatchError,
    -32021: MissingClientCapabilityError,
    -32022: UnsupportedProtocolVersionError,
}


def server_error_from_wire(
    code: int, message: str, data: Any = None, *, method: str | None = None, modern: bool = False
) -> ServerError:
    """Build the most specific [`ServerError`][trio_mcp.ServerError] for a JSON-RPC error.

    ``data`` is the error's decoded ``data`` member; what a subclass reads from it is parsed
    here, at the trust boundary (the elicitations of a ``-32042``).
    """
    del modern  # -32602 on resources/read means "not found" in practice in both eras
    if code == -32602 and method == "resources/read":
        return ResourceNotFoundError(code, message, data, method=method)
    if code == -32042:
        return URLElicitationRequiredError(
            code, message, data, method=method, elicitations=url_elicitations(data)
        )
    cls = _ERROR_CLASSES.get(code, ServerError)
    return cls(code, message, data, method=method)


def url_elicitations(data: object) -> list[ElicitRequestURLParams]:
    """The URL-mode elicitations in the ``data`` of a ``-32042`` error.

    Entries that are not valid URL-mode elicitations are left out; anything but a mapping
    with an ``elicitations`` list gives an empty list.
    """
    found: list[ElicitRequestURLParams] = []
    if isinstance(data, dict):
        items: object = cast("dict[str, object]", data).get("elicitations")
        if isinstance(items, list):
            for item in cast("list[object]", items):
                try:
                    found.append(msgspec.convert(item, ElicitRequestURLParams))
                except Exception:  # the trust boundary: a bad entry is left out
                    continue
    return found

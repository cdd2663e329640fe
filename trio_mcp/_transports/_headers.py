"""The request-metadata header rules of modern Streamable HTTP (revision 2026-07-28).

Modern clients mirror parts of each JSON-RPC request into HTTP headers so that
intermediaries can route on them without parsing the body:

* ``Mcp-Method``: the request's ``method``;
* ``Mcp-Name``: ``params.name`` of ``tools/call`` and ``prompts/get``, ``params.uri`` of
  ``resources/read``;
* ``Mcp-Param-{Name}``: tool arguments whose property schema carries an ``x-mcp-header``
  annotation.

Values that are not plain, header-safe ASCII are sent in the Base64 sentinel form
``=?base64?{Base64 of the UTF-8 bytes}?=`` (`encode_header_value()`).

Everything here works on plain dicts, so it does not depend on the protocol types.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, cast

__all__ = [
    "MAX_SAFE_INTEGER",
    "NAME_PARAMS",
    "PARAM_HEADER_PREFIX",
    "ECHO_LIMIT",
    "decode_header_value",
    "echo_problem",
    "encode_header_value",
    "header_parameters",
    "is_plain_header_value",
    "may_hold_annotation",
    "param_headers",
    "request_name",
    "validate_tool_headers",
]

PARAM_HEADER_PREFIX: Final = "Mcp-Param-"
"""The prefix of the header a tool argument annotated with ``x-mcp-header`` travels in."""

NAME_PARAMS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}
"""Which ``params`` member each method mirrors into the ``Mcp-Name`` header."""

ECHO_LIMIT: Final = 8192
"""The longest value from a peer that is sent back in a header (``echo_problem``)."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer an ``x-mcp-header`` argument may carry (2**53 - 1, JavaScript's
``Number.MAX_SAFE_INTEGER``); the smallest is its negation."""

_ANNOTATION: Final = "x-mcp-header"
_SENTINEL_PREFIX: Final = "=?base64?"
_SENTINEL_SUFFIX: Final = "?="
# Header-safe plain values: visible ASCII and space. Tab is legal in HTTP field values but
# is a control character, so it is Base64-encoded like the others (always decodable).
_PLAIN_SAFE: Final = re.compile(r"[\x20-\x7e]*")
# RFC 9110 section 5.6.2: token = 1*tchar.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE_TYPES: Final = frozenset({"string", "integer", "boolean"})
# The annotation's name as it may appear in JSON text: literally, or with any of its
# characters (all printable ASCII, U+0020..U+007F) written as a \u escape.
_ANNOTATION_BYTES: Final = _ANNOTATION.encode("ascii")
_ASCII_ESCAPE: Final = re.compile(rb"\\u00[2-7]")

# JSON Schema 2020-12 keywords whose values are schemas. Only ``properties`` continues a
# statically reachable chain; every other applicator leaves it. Instance-data keywords
# (``const``, ``default``, ``enum``, ``examples``) are never entered: their contents are
# data, not annotations. ``$ref`` is not followed.
_ONE_SCHEMA: Final = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_MAPS: Final = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties"})


def _needs_encoding(value: str) -> bool:
    if not _PLAIN_SAFE.fullmatch(value):
        return True  # non-ASCII or control characters
    if value != value.strip(" "):
        return True  # leading or trailing whitespace would be lost by HTTP parsers
    return value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX)


def is_plain_header_value(value: str) -> bool:
    """Whether ``value`` can be sent as a header value as it is, without encoding.

    That is: not empty, visible ASCII and inner spaces only, no leading or trailing space.
    ``Mcp-Method`` has no encoding in the spec, so a method name must be plain.

    Args:
        value: The would-be header value.
    """
    return bool(value) and _PLAIN_SAFE.fullmatch(value) is not None and value == value.strip(" ")


def echo_problem(value: str) -> str | None:
    """Why a value a peer sent cannot go back to it in a header, or None when it can.

    The one check of every value that comes from a peer's bytes and goes into a request
    header: a legacy ``Mcp-Session-Id``, an SSE event id sent back as ``Last-Event-ID``,
    an access token sent as ``Authorization``. It is made once, where the value is
    received, and a value that fails it fails the request that brought it at once (a value
    that cannot be sent would otherwise fail every later request, or every attempt to
    resume a stream, until the caller's deadline).

    The rule: 1 to ``ECHO_LIMIT`` (8192) characters of
    visible ASCII and inner spaces (no control character, no leading or trailing space).

    Args:
        value: The value as received (bytes the peer sent, decoded with replacement).

    Returns:
        A short reason, e.g. ``"is empty"``, to put after the value's name in a message.
    """
    if not value:
        return "is empty"
    if len(value) > ECHO_LIMIT:
        return f"is {len(value)} characters long (at most {ECHO_LIMIT} are sent back)"
    if not is_plain_header_value(value):
        return "holds characters a header cannot carry (only visible ASCII and inner spaces)"
    return None


def encode_header_value(value: str) -> str:
    """Encode a value for the ``Mcp-Name`` or an ``Mcp-Param-*`` header.

    Plain visible ASCII (and inner spaces) is sent as it is. A value with non-ASCII or
    control characters (tab and newline included), leading or trailing spaces, or one
    that itself looks like the sentinel, is sent as ``=?base64?{Base64 of UTF-8}?=``.

    Args:
        value: The value, already converted to a string.

    Returns:
        The header value.
    """
    if not _needs_encoding(value):
        return value
    encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return f"{_SENTINEL_PREFIX}{encoded}{_SENTINEL_SUFFIX}"


def decode_header_value(value: str) -> str:
    """Decode a header value written by `encode_header_value()`.

    Args:
        value: The received header value.

    Returns:
        The original value: the value itself unless it is in the Base64 sentinel form.

    Raises:
        ValueError: The value has the sentinel form but its payload is not valid
            Base64 of UTF-8 text.
    """
    if not (
        len(value) >= len(_SENTINEL_PREFIX) + len(_SENTINEL_SUFFIX)
        and value.startswith(_SENTINEL_PREFIX)
        and value.endswith(_SENTINEL_SUFFIX)
    ):
        return value
    payload = value[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed Base64 header value {value!r}: {exc}") from exc


def request_name(method: str, params: Mapping[str, Any] | None) -> str | None:
    """Return the value a request mirrors into ``Mcp-Name`` (not yet encoded).

    Args:
        method: The JSON-RPC method.
        params: The request's params.

    Returns:
        ``params["name"]`` for ``tools/call`` and ``prompts/get``, ``params["uri"]`` for
        ``resources/read``, ``None`` for other methods or when the member is missing.
    """
    key = NAME_PARAMS.get(method)
    if key is None or params is None:
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None


def _schema_positions(
    root: object,
) -> Iterator[tuple[tuple[str, ...] | None, Mapping[str, Any]]]:
    """Yield ``(path, schema)`` for every subschema of ``root``.

    ``path`` is the chain of ``properties`` keys leading from the root to the subschema,
    or ``None`` once the walk went through any other keyword. The root has path ``()``.
    """
    stack: list[tuple[tuple[str, ...] | None, object]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        schema = cast("Mapping[str, Any]", node)
        yield path, schema
        for keyword, value in schema.items():
            if keyword == "properties" and isinstance(value, Mapping):
                for name, sub in cast("Mapping[str, Any]", value).items():
                    stack.append((None if path is None else (*path, name), sub))
            elif keyword in _SCHEMA_MAPS and isinstance(value, Mapping):
                stack.extend((None, sub) for sub in cast("Mapping[str, Any]", value).values())
            elif keyword in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((None, sub) for sub in cast("list[object]", value))
            elif keyword in _ONE_SCHEMA:
                stack.append((None, value))


def _type_reason(schema: Mapping[str, Any]) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        types = [declared]
    elif isinstance(declared, list) and all(
        isinstance(t, str) for t in cast("list[object]", declared)
    ):
        # Allow a nullable primitive such as ["string", "null"]: null values are omitted.
        types = [t for t in cast("list[str]", declared) if t != "null"]
    else:
        return "it has no primitive type (declare type integer, string or boolean)"
    if not types or any(t not in _PRIMITIVE_TYPES for t in types):
        shown = declared if isinstance(declared, str) else "/".join(cast("list[str]", declared))
        return f"its type {shown!r} is not integer, string or boolean"
    return None


def _tool_label(tool: Mapping[str, Any]) -> str:
    name = tool.get("name")
    return repr(name) if isinstance(name, str) else "<unnamed tool>"


def validate_tool_headers(tool: Mapping[str, Any]) -> str | None:
    """Check a tool definition's ``x-mcp-header`` annotations against the spec's rules.

    An annotation must be a non-empty HTTP token (``1*tchar``; so no control characters,
    CR or LF), unique among the tool's annotations ignoring case, and sit on a property
    of type integer, string or boolean (``number`` is not allowed) that is statically
    reachable from the schema root through ``properties`` keys only (not through
    ``items``, ``oneOf``/``anyOf``/``allOf``/``not``, ``if``/``then``/``else``,
    ``$defs`` or ``$ref``). Clients on Streamable HTTP must leave a tool that breaks any
    rule out of ``tools/list`` and should log the returned reason.

    Args:
        tool: The tool definition as decoded JSON (``name``, ``inputSchema``, ...).

    Returns:
        ``None`` if every annotation is valid, otherwise why the tool is rejected.
    """
    schema = tool.get("inputSchema")
    seen: dict[str, str] = {}
    for path, subschema in _schema_positions(schema):
        if _ANNOTATION not in subschema:
            continue
        if not path:
            where = "the schema root" if path == () else "a position outside any properties chain"
            return (
                f"tool {_tool_label(tool)}: {_ANNOTATION} at {where}; it may only annotate "
                "properties reached from the root through 'properties' keys alone"
            )
        prop = ".".join(path)
        header = subschema[_ANNOTATION]
        if not isinstance(header, str):
            return (
                f"tool {_tool_label(tool)}: {_ANNOTATION} of property {prop!r} is a "
                f"{type(header).__name__}, not a string"
            )
        if not header:
            return f"tool {_tool_label(tool)}: {_ANNOTATION} of property {prop!r} is empty"
        if not _TOKEN.fullmatch(header):
            return (
                f"tool {_tool_label(tool)}: {_ANNOTATION} {header!r} of property {prop!r} "
                "is not a valid HTTP header name token"
            )
        type_reason = _type_reason(subschema)
        if type_reason is not None:
            return (
                f"tool {_tool_label(tool)}: {_ANNOTATION} {header!r} is on property "
                f"{prop!r} but {type_reason}"
            )
        key = header.lower()
        if key in seen:
            return (
                f"tool {_tool_label(tool)}: {_ANNOTATION} {header!r} of property {prop!r} "
                f"duplicates the one of property {seen[key]!r} (names are case-insensitive)"
            )
        seen[key] = prop
    return None


def may_hold_annotation(data: bytes | bytearray | memoryview) -> bool:
    """Whether JSON text may hold the string ``x-mcp-header``, as a key or anywhere else.

    A conservative test on the bytes themselves, for skipping `validate_tool_headers()`
    on listings that cannot hold an annotation: False only when no string the text decodes
    to can contain ``x-mcp-header``, that is when the text has it nowhere literally and
    has no ``\\u`` escape of a printable ASCII character (the only other way to spell it
    in JSON). Any escape of such a character, or an escaped backslash before a ``u``,
    makes it True: the full check then decides.

    Args:
        data: JSON text (UTF-8), e.g. the bytes of one ``tools/list`` result.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    if _ANNOTATION_BYTES in data:
        return True
    return b"\\" in data and _ASCII_ESCAPE.search(data) is not None


def header_parameters(tool: Mapping[str, Any]) -> dict[tuple[str, ...], str]:
    """Map the property path of each ``x-mcp-header`` annotation to its header name part.

    Args:
        tool: A tool definition that `validate_tool_headers()` accepted.

    Returns:
        ``{("region",): "Region", ("location", "zone"): "Zone", ...}``.
    """
    found: dict[tuple[str, ...], str] = {}
    for path, subschema in _schema_positions(tool.get("inputSchema")):
        header = subschema.get(_ANNOTATION)
        if path and isinstance(header, str):
            found[path] = header
    return found


def _header_text(value: object, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(
                f"argument {where!r} = {value} is outside the safe integer range "
                f"(±{MAX_SAFE_INTEGER}) that x-mcp-header parameters allow"
            )
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return _header_text(int(value), where)
    if isinstance(value, (str, float)):
        return str(value)
    return None  # objects and arrays have no header form; the server validates the body


def _value_at(arguments: object, path: tuple[str, ...]) -> object:
    node = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = cast("Mapping[str, object]", node).get(key)
    return node


def param_headers(tool: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, str]:
    """Build the ``Mcp-Param-*`` headers for a ``tools/call`` of ``tool`` with ``arguments``.

    For each annotated property, the value at its exact property path in ``arguments``
    is converted (strings as they are, integers in decimal, booleans as ``true`` /
    ``false``) and encoded with `encode_header_value()`. A missing or ``null`` value
    produces no header.

    Args:
        tool: The tool definition (already accepted by `validate_tool_headers()`).
        arguments: The call's arguments.

    Returns:
        The headers to add to the request, e.g. ``{"Mcp-Param-Region": "us-west1"}``.

    Raises:
        ValueError: The tool's annotations are invalid, or an integer argument mirrored
            into a header is outside ±(2**53 - 1).
    """
    reason = validate_tool_headers(tool)
    if reason is not None:
        raise ValueError(reason)
    headers: dict[str, str] = {}
    for path, header in header_parameters(tool).items():
        text = _header_text(_value_at(arguments, path), ".".join(path))
        if text is not None:
            headers[f"{PARAM_HEADER_PREFIX}{header}"] = encode_header_value(text)
    return headers

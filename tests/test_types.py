"""Tests for trio_mcp.types: every spec example round-trips, and the tolerant paths hold."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

import trio_mcp
from trio_mcp import types as t
from trio_mcp._exceptions import ToolError

from .spec import SPEC, SPEC_MISSING, needs_spec

REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
EXAMPLE_FILES = sorted(SPEC.glob("*/examples/**/*.json"))
# Without the spec folder the parametrised tests below show one visible skip (never an empty,
# silently passing parametrisation).
EXAMPLE_PARAMS: list[Any] = list(EXAMPLE_FILES) or [
    pytest.param(None, marks=pytest.mark.skip(reason=SPEC_MISSING))
]

# --- how each example folder maps onto the types -------------------------------------------

# JSON-RPC request envelopes: folder -> (method, params type).
REQUESTS: dict[str, tuple[str, Any]] = {
    "CallToolRequest": ("tools/call", t.CallToolRequestParams),
    "CompleteRequest": ("completion/complete", t.CompleteRequestParams),
    "DiscoverRequest": ("server/discover", t.RequestParams),
    "GetPromptRequest": ("prompts/get", t.GetPromptRequestParams),
    "ListPromptsRequest": ("prompts/list", t.PaginatedRequestParams),
    "ListResourceTemplatesRequest": ("resources/templates/list", t.PaginatedRequestParams),
    "ListResourcesRequest": ("resources/list", t.PaginatedRequestParams),
    "ListToolsRequest": ("tools/list", t.PaginatedRequestParams),
    "ReadResourceRequest": ("resources/read", t.ReadResourceRequestParams),
    "SubscriptionsListenRequest": ("subscriptions/listen", t.SubscriptionsListenRequestParams),
}

# JSON-RPC notification envelopes: folder -> (method, params type).
NOTIFICATIONS: dict[str, tuple[str, Any]] = {
    "CancelledNotification": ("notifications/cancelled", t.CancelledNotificationParams),
    "LoggingMessageNotification": ("notifications/message", t.LoggingMessageNotificationParams),
    "ProgressNotification": ("notifications/progress", t.ProgressNotificationParams),
    "PromptListChangedNotification": ("notifications/prompts/list_changed", t.NotificationParams),
    "ResourceListChangedNotification": (
        "notifications/resources/list_changed",
        t.NotificationParams,
    ),
    "ResourceUpdatedNotification": (
        "notifications/resources/updated",
        t.ResourceUpdatedNotificationParams,
    ),
    "SubscriptionsAcknowledgedNotification": (
        "notifications/subscriptions/acknowledged",
        t.SubscriptionsAcknowledgedNotificationParams,
    ),
    "ToolListChangedNotification": ("notifications/tools/list_changed", t.NotificationParams),
}

# Bare JSON-RPC error objects: folder -> code.
ERROR_OBJECTS = {
    "InternalError": -32603,
    "InvalidParamsError": -32602,
    "MethodNotFoundError": -32601,
    "ParseError": -32700,
}

# Whole JSON-RPC error responses: folder -> code.
ERROR_RESPONSES = {
    "HeaderMismatchError": -32020,
    "MissingRequiredClientCapabilityError": -32021,
    "UnsupportedProtocolVersionError": -32022,
}

# The 2026-07-28 input requests are {method, params} objects, decoded whole. The
# ListRootsRequest example also carries a JSON-RPC ``id``; it is not part of the type and is
# dropped (the one documented difference between an example and its re-encoding).
INPUT_REQUEST_EXTRA_KEYS = {"id", "jsonrpc"}


def _example_id(path: Path | None) -> str:
    return "spec-missing" if path is None else str(path.relative_to(SPEC))


def _roundtrip(raw: bytes, tp: Any) -> tuple[Any, Any]:
    """Decode, re-encode, re-decode; return (decoded, re-encoded JSON as Python objects)."""
    decoder = t.decoder_for(tp)
    decoded = decoder.decode(raw)
    encoded = msgspec.json.encode(decoded)
    assert decoder.decode(encoded) == decoded
    return decoded, json.loads(encoded)


def _struct_type(folder: str) -> Any:
    tp = getattr(
        t, folder.removesuffix("Response") if folder.endswith("ResultResponse") else folder
    )
    return tp


@needs_spec
def test_examples_exist() -> None:
    assert len(EXAMPLE_FILES) > 100


@pytest.mark.parametrize("path", EXAMPLE_PARAMS, ids=_example_id)
def test_example_roundtrip(path: Path) -> None:
    folder = path.parent.name
    raw = path.read_bytes()
    original = json.loads(raw)

    if folder in REQUESTS or folder in NOTIFICATIONS:
        method, params_type = REQUESTS.get(folder) or NOTIFICATIONS[folder]
        assert original["jsonrpc"] == "2.0"
        assert original["method"] == method
        assert ("id" in original) == (folder in REQUESTS)
        params_raw = json.dumps(original["params"]).encode()
        decoded, again = _roundtrip(params_raw, params_type)
        assert isinstance(decoded, params_type)
        assert again == original["params"]
    elif folder.endswith("ResultResponse"):
        result_raw = json.dumps(original["result"]).encode()
        result_type = t.peek_result_type(result_raw)
        tp = t.InputRequiredResult if result_type == "input_required" else _struct_type(folder)
        decoded, again = _roundtrip(result_raw, tp)
        assert isinstance(decoded, tp)
        assert decoded.result_type == original["result"]["resultType"]
        assert again == original["result"]
    elif folder in ERROR_OBJECTS:
        decoded, again = _roundtrip(raw, t.Error)
        assert decoded.code == ERROR_OBJECTS[folder]
        assert decoded.message == original["message"]
        assert again == original
    elif folder in ERROR_RESPONSES:
        assert original["jsonrpc"] == "2.0"
        decoded, again = _roundtrip(json.dumps(original["error"]).encode(), t.Error)
        assert decoded.code == ERROR_RESPONSES[folder]
        assert decoded.message == original["error"]["message"]
        assert again == original["error"]
    elif folder in ("CreateMessageRequest", "ElicitRequest", "ListRootsRequest"):
        tp = getattr(t, folder)
        decoded, again = _roundtrip(raw, tp)
        assert isinstance(decoded, tp)
        assert decoded.method == original["method"]
        expected = {k: v for k, v in original.items() if k not in INPUT_REQUEST_EXTRA_KEYS}
        assert again == expected
    else:
        # A plain type: the folder is the struct (or alias) name.
        tp = getattr(t, folder)
        decoded, again = _roundtrip(raw, tp)
        assert again == original


@needs_spec
def test_every_example_folder_is_mapped() -> None:
    """No example is silently skipped: every folder is a known envelope or a type name."""
    for path in EXAMPLE_FILES:
        folder = path.parent.name
        known = (
            folder in REQUESTS
            or folder in NOTIFICATIONS
            or folder in ERROR_OBJECTS
            or folder in ERROR_RESPONSES
            or folder.endswith("ResultResponse")
            or hasattr(t, folder)
        )
        assert known, folder


# --- the structs against the JSON schemas of every revision -------------------------------

# Definitions that are not protocol payloads this module models as structs, with the reason.
SKIPPED_DEFINITIONS = {
    # 2024-11-05 mixin named like typing.Annotated; its one field lives on each user.
    "Annotated",
    # Generic envelope bases: the session's _jsonrpc models these.
    "Request",
    "Notification",
    "JSONRPCRequest",
    "JSONRPCNotification",
    "JSONRPCResponse",
    "JSONRPCResultResponse",
    "JSONRPCError",
    "JSONRPCErrorResponse",
    # _meta shapes: ``meta`` stays a dict everywhere (typed views exist for the 2026 ones).
    "MetaObject",
    "JSONObject",
}


def _definitions(revision: str) -> dict[str, Any]:
    schema = json.loads((SPEC / revision / "schema.json").read_text())
    defs: dict[str, Any] = schema.get("definitions") or schema["$defs"]
    return defs


def _is_envelope(name: str, definition: dict[str, Any]) -> bool:
    props = definition.get("properties", {})
    return (
        ("method" in props and (name.endswith(("Request", "Notification"))))
        or "jsonrpc" in props
        or name.endswith("ResultResponse")
    )


def _schema_shapes() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Every object shape per type name and revision, inline params included."""
    shapes: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for revision in REVISIONS:
        for name, definition in _definitions(revision).items():
            if "properties" not in definition or name in SKIPPED_DEFINITIONS:
                continue
            if _is_envelope(name, definition):
                params = definition["properties"].get("params", {})
                if "properties" in params:  # legacy inline params
                    shapes.setdefault(f"{name}Params", []).append((revision, params))
                continue
            shapes.setdefault(name, []).append((revision, definition))
    return shapes


# The 2026-07-28 input requests are modelled as {method, params} structs; their legacy
# envelope form contributes inline params (above), not fields.
INPUT_REQUESTS = {"CreateMessageRequest", "ElicitRequest", "ListRootsRequest"}

# Inline legacy params of requests/notifications that have no named params type of their
# own; they map onto the struct named here.
SHAPE_ALIASES = {
    "PingRequestParams": "RequestParams",
    "ListRootsRequestParams": "RequestParams",
    "ListPromptsRequestParams": "PaginatedRequestParams",
    "ListResourcesRequestParams": "PaginatedRequestParams",
    "ListResourceTemplatesRequestParams": "PaginatedRequestParams",
    "ListToolsRequestParams": "PaginatedRequestParams",
    "PaginatedRequestParams": "PaginatedRequestParams",
    "InitializedNotificationParams": "NotificationParams",
    "PromptListChangedNotificationParams": "NotificationParams",
    "ResourceListChangedNotificationParams": "NotificationParams",
    "ToolListChangedNotificationParams": "NotificationParams",
    "RootsListChangedNotificationParams": "NotificationParams",
    "ElicitRequestParams": "ElicitRequestFormParams",  # 2025-06-18: form only, no mode
    "EnumSchema": "LegacyTitledEnumSchema",  # 2025-06-18: an object, the legacy shape
    "ElicitationCompleteNotificationParams": "ElicitationCompleteNotificationParams",
    "GetTaskRequestParams": "GetTaskRequestParams",
    "GetTaskPayloadRequestParams": "GetTaskPayloadRequestParams",
    "CancelTaskRequestParams": "CancelTaskRequestParams",
    "ListTasksRequestParams": "PaginatedRequestParams",
    "SubscriptionsListenResultMetaObject": "SubscriptionsListenResultMetaObject",
    # 2026-07-28 names for error objects with a fixed code: all are the ``Error`` shape.
    "InternalError": "Error",
    "InvalidParamsError": "Error",
    "InvalidRequestError": "Error",
    "MethodNotFoundError": "Error",
    "ParseError": "Error",
}

# Fields deliberately optional although some revision requires them: required ``_meta`` of
# 2026-07-28 requests (legacy requests have none), and 2026-only required fields of types
# that also exist in legacy revisions are already optional by the union rule.
OPTIONAL_ON_PURPOSE = {
    ("CallToolRequestParams", "_meta"),
    ("CompleteRequestParams", "_meta"),
    ("GetPromptRequestParams", "_meta"),
    ("PaginatedRequestParams", "_meta"),
    ("ReadResourceRequestParams", "_meta"),
    ("ResourceRequestParams", "_meta"),
    ("RequestParams", "_meta"),
    ("InputResponseRequestParams", "_meta"),
    ("SubscriptionsListenRequestParams", "_meta"),
    ("SubscriptionsListenResult", "_meta"),
    # 2026-07-28 cacheable results: a legacy server never sends these.
    ("CacheableResult", "ttlMs"),
    ("CacheableResult", "cacheScope"),
    ("CacheableResult", "resultType"),
    ("DiscoverResult", "ttlMs"),
    ("DiscoverResult", "cacheScope"),
    ("DiscoverResult", "resultType"),
    ("InputRequiredResult", "resultType"),
    ("SubscriptionsListenResult", "resultType"),
    ("SubscriptionsListenResultMetaObject", "io.modelcontextprotocol/subscriptionId"),
    ("RequestMetaObject", "io.modelcontextprotocol/clientCapabilities"),
    ("RequestMetaObject", "io.modelcontextprotocol/protocolVersion"),
}


def _struct_for(name: str) -> Any:
    return getattr(t, SHAPE_ALIASES.get(name, name), None)


def _wire_fields(cls: Any) -> dict[str, bool]:
    """Wire name -> required, including a tag field (always written)."""
    fields = {f.encode_name: f.required for f in msgspec.structs.fields(cls)}
    tag_field = cls.__struct_config__.tag_field
    if tag_field is not None:
        fields[tag_field] = True
    return fields


SHAPE_PARAMS: list[Any] = (
    sorted(_schema_shapes())
    if not SPEC_MISSING
    else [pytest.param("spec-missing", marks=pytest.mark.skip(reason=SPEC_MISSING))]
)


@pytest.mark.parametrize("name", SHAPE_PARAMS)
def test_struct_matches_schema(name: str) -> None:
    """Each object definition of every revision has a struct with every property.

    A field is required exactly when every revision that defines it requires it.
    """
    cls = _struct_for(name)
    assert cls is not None, f"no struct for schema definition {name}"
    assert isinstance(cls, type)
    assert issubclass(cls, msgspec.Struct)
    assert cls.__doc__
    fields = _wire_fields(cls)
    shapes = _schema_shapes()[name]
    seen: dict[str, list[bool]] = {}
    for _revision, shape in shapes:
        for prop in shape["properties"]:
            seen.setdefault(prop, []).append(prop in shape.get("required", []))
    for prop, required_in in seen.items():
        assert prop in fields, f"{name}.{prop} missing"
        if name in INPUT_REQUESTS or prop == cls.__struct_config__.tag_field:
            continue
        should_require = all(required_in) and len(required_in) == len(shapes)
        if (name, prop) in OPTIONAL_ON_PURPOSE:
            assert not fields[prop]
            continue
        assert fields[prop] == should_require, f"{name}.{prop} required={fields[prop]}"


def test_every_struct_is_documented() -> None:
    for name in t.__all__:
        obj = getattr(t, name)
        if isinstance(obj, type):
            assert (obj.__doc__ or "").strip(), name


def test_all_tasks_shapes_match_task() -> None:
    """The allOf(Result, Task) types carry exactly Task's fields."""
    task_fields = _wire_fields(t.Task)
    for cls in (t.GetTaskResult, t.CancelTaskResult, t.TaskStatusNotificationParams):
        fields = _wire_fields(cls)
        for name, required in task_fields.items():
            assert fields[name] == required, (cls, name)


# --- content blocks ----------------------------------------------------------------------

UNKNOWN_BLOCK = {"type": "hologram", "frames": [1, 2, 3], "meta": {"fps": 30}, "_meta": {"a": 1}}


def test_unknown_content_tag_survives_roundtrip() -> None:
    message = {
        "content": [
            {"type": "text", "text": "hello"},
            UNKNOWN_BLOCK,
            {"type": "resource", "resource": {"uri": "file:///a", "blob": "AAAA"}},
        ],
        "isError": False,
    }
    raw = json.dumps(message).encode()
    result = t.decoder_for(t.CallToolResult).decode(raw)
    assert isinstance(result.content[0], t.TextContent)
    unknown = result.content[1]
    assert isinstance(unknown, t.UnknownContent)
    assert unknown.type == "hologram"
    assert unknown.raw == UNKNOWN_BLOCK
    assert isinstance(result.content[2], t.EmbeddedResource)
    assert json.loads(msgspec.json.encode(result)) == message
    assert t.to_builtins(result) == message


def test_unknown_content_nested_everywhere() -> None:
    """Unknown blocks inside tool results, sampling lists, prompts and input requests."""
    sampling = {
        "role": "user",
        "content": [
            {"type": "tool_result", "toolUseId": "1", "content": [UNKNOWN_BLOCK]},
            UNKNOWN_BLOCK,
        ],
        "model": "m",
    }
    created = t.decoder_for(t.CreateMessageResult).decode(json.dumps(sampling).encode())
    assert isinstance(created.content, list)
    tool_result = created.content[0]
    assert isinstance(tool_result, t.ToolResultContent)
    assert tool_result.content == [t.UnknownContent(UNKNOWN_BLOCK)]
    assert json.loads(msgspec.json.encode(created)) == sampling

    prompt = {"messages": [{"role": "assistant", "content": UNKNOWN_BLOCK}]}
    got = t.decoder_for(t.GetPromptResult).decode(json.dumps(prompt).encode())
    assert isinstance(got.messages[0].content, t.UnknownContent)
    assert json.loads(msgspec.json.encode(got)) == prompt

    input_required = {
        "resultType": "input_required",
        "inputRequests": {
            "q": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{"role": "user", "content": UNKNOWN_BLOCK}],
                    "maxTokens": 5,
                },
            }
        },
    }
    ir = t.decoder_for(t.InputRequiredResult).decode(json.dumps(input_required).encode())
    assert not isinstance(ir.input_requests, msgspec.UnsetType)
    request = ir.input_requests["q"]
    assert isinstance(request, t.CreateMessageRequest)
    assert isinstance(request.params.messages[0].content, t.UnknownContent)
    assert json.loads(msgspec.json.encode(ir)) == input_required


def test_unknown_content_match() -> None:
    result = t.from_builtins(
        {"content": [UNKNOWN_BLOCK, {"type": "text", "text": "x"}]}, t.CallToolResult
    )
    seen: list[tuple[str, str]] = []
    for block in result.content:
        match block:
            case t.TextContent(text=text):
                seen.append(("text", text))
            case t.UnknownContent(type=tag):
                seen.append(("unknown", tag))
            case _:
                seen.append(("other", ""))
    assert seen == [("unknown", "hologram"), ("text", "x")]
    assert [block.type for block in result.content] == ["hologram", "text"]


def test_known_tag_with_bad_fields_is_still_an_error() -> None:
    """Tolerance covers unknown *types* only; a malformed known block is a real error."""
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.CallToolResult).decode(b'{"content":[{"type":"text"}]}')
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.CallToolResult).decode(b'{"content":[{"type":"text","text":"a"},{"x":1}]}')
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.CallToolResult).decode(b'{"isError":true}')
    with pytest.raises(msgspec.ValidationError):
        t.from_builtins(
            {"content": [{"type": "image", "data": "x"}, UNKNOWN_BLOCK]}, t.CallToolResult
        )


def test_every_content_type_decodes_in_every_content_position() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "a"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
        {"type": "resource", "resource": {"uri": "file:///x", "text": "t"}},
        {"type": "tool_use", "id": "1", "name": "n", "input": {}},
        {"type": "tool_result", "toolUseId": "1", "content": []},
    ]
    result = t.decoder_for(t.CallToolResult).decode(json.dumps({"content": blocks}).encode())
    assert [type(b).__name__ for b in result.content] == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
        "ToolUseContent",
        "ToolResultContent",
    ]
    assert [b.type for b in result.content] == [b["type"] for b in blocks]
    assert json.loads(msgspec.json.encode(result))["content"] == blocks


# --- resource contents -------------------------------------------------------------------


def test_resource_contents_by_key() -> None:
    message = {
        "contents": [
            {"uri": "file:///a", "text": "hi", "mimeType": "text/plain"},
            {"uri": "file:///b", "blob": "AAAA"},
            {"uri": "file:///c", "mimeType": "application/x-future", "json": {"k": 1}},
        ]
    }
    result = t.decoder_for(t.ReadResourceResult).decode(json.dumps(message).encode())
    text, blob, other = result.contents
    assert type(text) is t.TextResourceContents
    assert text.text == "hi"
    assert type(blob) is t.BlobResourceContents
    assert blob.blob == "AAAA"
    assert type(other) is t.ResourceContents
    assert other.uri == "file:///c"
    assert other.mime_type == "application/x-future"
    encoded = json.loads(msgspec.json.encode(result))
    assert encoded["contents"][:2] == message["contents"][:2]
    # The unknown shape keeps its known fields; its unknown key is dropped like any other.
    assert encoded["contents"][2] == {"uri": "file:///c", "mimeType": "application/x-future"}


def test_resource_contents_user_constructed() -> None:
    result = t.ReadResourceResult(contents=[t.TextResourceContents(uri="u", text="x")])
    assert isinstance(result.contents[0], t.TextResourceContents)
    embedded = t.EmbeddedResource(resource=t.BlobResourceContents(uri="u", blob="AA"))
    assert t.to_builtins(embedded) == {"type": "resource", "resource": {"uri": "u", "blob": "AA"}}
    assert t.decoder_for(t.AnyResourceContents).decode(b'{"uri":"u","blob":"AA"}') == (
        t.BlobResourceContents(uri="u", blob="AA")
    )


def test_resource_contents_without_uri_is_an_error() -> None:
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.ReadResourceResult).decode(b'{"contents":[{"text":"x"}]}')


# --- unknown fields, schemas, raise_for_error ---------------------------------------------


def test_unknown_fields_are_tolerated() -> None:
    raw = json.dumps(
        {
            "tools": [
                {
                    "name": "t",
                    "inputSchema": {"type": "object"},
                    "futureField": {"deep": [1, 2]},
                    "annotations": {"readOnlyHint": True, "sparkly": True},
                }
            ],
            "someFutureTopLevel": 1,
            "resultType": "complete",
        }
    ).encode()
    result = t.decoder_for(t.ListToolsResult).decode(raw)
    assert result.tools[0].name == "t"
    assert result.tools[0].annotations == t.ToolAnnotations(read_only_hint=True)
    assert not hasattr(result.tools[0], "future_field")
    caps = t.decoder_for(t.ServerCapabilities).decode(
        b'{"tools":{"listChanged":true,"future":1},"holograms":{}}'
    )
    assert caps == t.ServerCapabilities(tools=t.ToolsCapability(list_changed=True))


SCHEMA_WITH_REFS: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:example:tool",
    "type": "object",
    "$defs": {
        "point": {
            "$anchor": "pt",
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "unevaluatedProperties": False,
        }
    },
    "properties": {
        "from": {"$ref": "#/$defs/point"},
        "to": {"$ref": "#pt", "x-mcp-header": "To"},
        "mode": {"enum": ["fast", "exact"], "default": "fast"},
        "tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
    },
    "if": {"properties": {"mode": {"const": "exact"}}},
    "then": {"required": ["from", "to"]},
    "else": {"required": ["from"]},
    "dependentRequired": {"to": ["from"]},
}


def test_json_schemas_kept_exactly() -> None:
    tool_json: dict[str, Any] = {
        "name": "route",
        "inputSchema": SCHEMA_WITH_REFS,
        "outputSchema": {"type": "array", "items": {"$ref": "#/$defs/x"}, "$defs": {"x": {}}},
    }
    raw = json.dumps(tool_json).encode()
    tool = t.decoder_for(t.Tool).decode(raw)
    assert tool.input_schema == SCHEMA_WITH_REFS
    # Same keys, same order, same values: byte-for-byte equal when encoded compactly.
    assert msgspec.json.encode(tool.input_schema) == msgspec.json.encode(SCHEMA_WITH_REFS)
    assert json.loads(msgspec.json.encode(tool)) == tool_json
    assert list(tool.input_schema) == list(SCHEMA_WITH_REFS)

    elicit: dict[str, Any] = {
        "message": "m",
        "requestedSchema": {"$schema": "x", "type": "object", "properties": {}},
    }
    params = t.decoder_for(t.ElicitRequestFormParams).decode(json.dumps(elicit).encode())
    assert params.requested_schema["$schema"] == "x"
    assert json.loads(msgspec.json.encode(params)) == elicit


def test_listed_tools_are_not_tracked_by_the_collector() -> None:
    # Issue 35: a listing of 1,000 tools is 1,000 objects fewer for the collector to walk
    # (Tool has gc=False); the JSON inside a tool stays tracked, so nothing is lost, and a
    # tool is still freed by reference counting when its listing goes.
    raw = json.dumps(
        {
            "tools": [
                {
                    "name": f"t{i}",
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    "outputSchema": {"type": "object", "required": ["x"]},
                    "annotations": {"readOnlyHint": True},
                    "icons": [{"src": "https://example.com/i.png", "sizes": ["16x16"]}],
                    "execution": {"taskSupport": "optional"},
                    "_meta": {"k": [1, 2]},
                }
                for i in range(3)
            ]
        }
    ).encode()
    listing = t.decoder_for(t.ListToolsResult).decode(raw)
    for tool in listing.tools:
        assert not gc.is_tracked(tool)
        assert gc.is_tracked(tool.input_schema)
        assert gc.is_tracked(tool.meta)
    made = t.Tool(name="x", input_schema={"type": "object", "properties": {}})
    assert not gc.is_tracked(made)
    before = len(gc.get_objects())
    del listing, tool, made
    assert len(gc.get_objects()) < before  # freed without a collection


def test_raise_for_error() -> None:
    ok = t.CallToolResult(content=[t.TextContent(text="fine")])
    assert ok.raise_for_error() is ok
    assert t.CallToolResult(content=[], is_error=False).raise_for_error().content == []

    failed = t.decoder_for(t.CallToolResult).decode(
        b'{"content":[{"type":"text","text":"bad date"},{"type":"image","data":"AA==",'
        b'"mimeType":"image/png"},{"type":"text","text":"try again"}],"isError":true}'
    )
    with pytest.raises(ToolError) as info:
        failed.raise_for_error()
    assert "bad date\ntry again" in str(info.value)
    assert info.value.result is failed

    silent = t.CallToolResult(content=[UNKNOWN_BLOCK_OBJ], is_error=True)
    with pytest.raises(ToolError, match="no text content"):
        silent.raise_for_error()


UNKNOWN_BLOCK_OBJ = t.UnknownContent(UNKNOWN_BLOCK)


def test_text_property() -> None:
    result = t.CallToolResult(
        content=[t.TextContent(text="a"), UNKNOWN_BLOCK_OBJ, t.TextContent(text="b")]
    )
    assert result.text == "a\nb"
    assert t.CallToolResult(content=[]).text == ""


# --- wire names and helpers --------------------------------------------------------------


def test_wire_names() -> None:
    result = t.CallToolResult(
        content=[t.TextContent(text="x", meta={"k": 1})],
        structured_content={"a": 1},
        is_error=True,
        result_type="complete",
        meta={"m": 2},
    )
    assert t.to_builtins(result) == {
        "_meta": {"m": 2},
        "resultType": "complete",
        "content": [{"type": "text", "text": "x", "_meta": {"k": 1}}],
        "structuredContent": {"a": 1},
        "isError": True,
    }
    listed = t.ListToolsResult(tools=[], next_cursor="c", ttl_ms=5, cache_scope="private")
    assert t.to_builtins(listed) == {
        "nextCursor": "c",
        "tools": [],
        "ttlMs": 5,
        "cacheScope": "private",
    }
    meta = msgspec.convert(
        {
            t.META_PROTOCOL_VERSION: "2026-07-28",
            t.META_CLIENT_CAPABILITIES: {"roots": {}},
            "progressToken": 3,
        },
        t.RequestMetaObject,
    )
    assert meta.protocol_version == "2026-07-28"
    assert meta.client_capabilities == t.ClientCapabilities(roots=t.RootsCapability())
    assert meta.progress_token == 3


def test_to_builtins_drops_unset() -> None:
    assert t.to_builtins({"cursor": UNSET, "x": 1}) == {"x": 1}
    assert t.to_builtins([1, UNSET, {"a": UNSET}]) == [1, {}]
    assert t.to_builtins(UNSET) is None
    nested = {"params": t.PaginatedRequestParams(cursor="c"), "other": UNSET}
    assert t.to_builtins(nested) == {"params": {"cursor": "c"}}
    assert t.to_builtins(t.Implementation(name="n", version="1")) == {"name": "n", "version": "1"}


def test_decoder_for_is_cached() -> None:
    assert t.decoder_for(t.Tool) is t.decoder_for(t.Tool)
    assert t.decoder_for(list[t.Tool]) is t.decoder_for(list[t.Tool])
    tools = t.decoder_for(list[t.Tool]).decode(b'[{"name":"a","inputSchema":{"type":"object"}}]')
    assert tools == [t.Tool(name="a", input_schema={"type": "object"})]


def test_decoder_accepts_raw() -> None:
    envelope = msgspec.json.decode(
        b'{"result":{"content":[{"type":"text","text":"r"}]}}', type=dict[str, msgspec.Raw]
    )
    result = t.decoder_for(t.CallToolResult).decode(envelope["result"])
    assert result.text == "r"


def test_peek_result_type() -> None:
    assert t.peek_result_type(b'{"content":[]}') == "complete"
    assert t.peek_result_type(b'{"resultType":"input_required"}') == "input_required"
    assert t.peek_result_type(b'{"resultType":"future","x":[1]}') == "future"


def test_elicit_params_dispatch() -> None:
    decoder = t.decoder_for(t.ElicitRequestParams)
    url = decoder.decode(b'{"mode":"url","message":"m","url":"https://x","elicitationId":"e"}')
    assert isinstance(url, t.ElicitRequestURLParams)
    assert url.elicitation_id == "e"
    assert t.to_builtins(url) == {
        "mode": "url",
        "message": "m",
        "url": "https://x",
        "elicitationId": "e",
    }
    legacy = decoder.decode(b'{"message":"m","requestedSchema":{"type":"object","properties":{}}}')
    assert isinstance(legacy, t.ElicitRequestFormParams)
    assert legacy.mode is UNSET
    form = decoder.decode(b'{"mode":"form","message":"m","requestedSchema":{}}')
    assert isinstance(form, t.ElicitRequestFormParams)
    assert form.mode == "form"
    with pytest.raises(msgspec.ValidationError):
        decoder.decode(b'{"mode":"carrier-pigeon","message":"m"}')


def test_input_responses_roundtrip() -> None:
    params = t.CallToolRequestParams(
        name="n",
        input_responses={
            "a": t.ElicitResult(action="accept", content={"name": "x", "n": 3, "tags": ["p"]}),
            "b": t.ListRootsResult(roots=[t.Root(uri="file:///r")]),
            "c": t.CreateMessageResult(
                role="assistant", content=t.TextContent(text="Paris"), model="m"
            ),
        },
        request_state="s",
    )
    raw = msgspec.json.encode(params)
    again = t.decoder_for(t.CallToolRequestParams).decode(raw)
    assert again == params
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.CallToolRequestParams).decode(b'{"name":"n","inputResponses":{"a":{}}}')


# --- legacy revisions --------------------------------------------------------------------


def test_legacy_initialize_result_2024_11_05() -> None:
    raw = json.dumps(
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "tools": {"listChanged": False},
                "experimental": {"x": {"y": 1}},
            },
            "serverInfo": {"name": "old", "version": "0.1"},
            "instructions": "be nice",
        }
    ).encode()
    init = t.decoder_for(t.InitializeResult).decode(raw)
    assert init.server_info == t.Implementation(name="old", version="0.1")
    assert init.capabilities.resources == t.ResourcesCapability(subscribe=True, list_changed=True)
    assert init.result_type is UNSET
    assert json.loads(msgspec.json.encode(init)) == json.loads(raw)
    assert t.peek_result_type(raw) == "complete"


def test_legacy_initialize_request_params() -> None:
    params = t.InitializeRequestParams(
        protocol_version="2025-06-18",
        capabilities=t.ClientCapabilities(
            roots=t.RootsCapability(list_changed=True),
            sampling=t.SamplingCapability(),
            elicitation=t.ElicitationCapability(),
        ),
        client_info=t.Implementation(name="trio-mcp", version="0"),
    )
    assert t.to_builtins(params) == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "trio-mcp", "version": "0"},
    }


def test_legacy_2024_call_tool_result_and_annotations() -> None:
    raw = (
        b'{"content":[{"type":"text","text":"x","annotations":{"audience":["user"],'
        b'"priority":0.5}}],"_meta":{"k":"v"}}'
    )
    result = t.decoder_for(t.CallToolResult).decode(raw)
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    assert block.annotations == t.Annotations(audience=["user"], priority=0.5)
    assert result.meta == {"k": "v"}
    assert result.is_error is UNSET
    assert json.loads(msgspec.json.encode(result)) == json.loads(raw)


def test_tasks_2025_11_25() -> None:
    task = {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2025-11-25T00:00:00Z",
        "lastUpdatedAt": "2025-11-25T00:00:01Z",
        "ttl": None,
        "pollInterval": 500,
    }
    created = t.decoder_for(t.CreateTaskResult).decode(json.dumps({"task": task}).encode())
    assert created.task.ttl is None
    assert created.task.status == "working"
    got = t.decoder_for(t.GetTaskResult).decode(json.dumps(task).encode())
    assert got.poll_interval == 500
    assert json.loads(msgspec.json.encode(got)) == task
    listed = t.decoder_for(t.ListTasksResult).decode(json.dumps({"tasks": [task]}).encode())
    assert listed.tasks[0].task_id == "t1"
    status = t.decoder_for(t.TaskStatusNotificationParams).decode(json.dumps(task).encode())
    assert json.loads(msgspec.json.encode(status)) == task
    # a status a newer server invents must not break decoding
    newer = t.decoder_for(t.GetTaskResult).decode(
        json.dumps({**task, "status": "sleeping"}).encode()
    )
    assert newer.status == "sleeping"


def test_sampling_with_tools_2025_11_25() -> None:
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
        "tools": [{"name": "w", "inputSchema": {"type": "object"}}],
        "toolChoice": {"mode": "required"},
        "includeContext": "thisServer",
        "task": {"ttl": 1000},
        "_meta": {"progressToken": 1},
    }
    decoded = t.decoder_for(t.CreateMessageRequestParams).decode(json.dumps(params).encode())
    assert decoded.tool_choice == t.ToolChoice(mode="required")
    assert decoded.task == t.TaskMetadata(ttl=1000)
    assert json.loads(msgspec.json.encode(decoded)) == params


def test_elicitation_primitive_schemas_build_requested_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": t.to_builtins(t.StringSchema(title="Name", min_length=1)),
            "age": t.to_builtins(t.NumberSchema(type="integer", minimum=0)),
            "ok": t.to_builtins(t.BooleanSchema(default=True)),
            "color": t.to_builtins(
                t.TitledSingleSelectEnumSchema(
                    one_of=[t.TitledEnumOption(const="#f00", title="Red")]
                )
            ),
            "many": t.to_builtins(
                t.UntitledMultiSelectEnumSchema(items=t.UntitledEnumItems(enum=["a", "b"]))
            ),
        },
    }
    assert schema["properties"] == {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "ok": {"type": "boolean", "default": True},
        "color": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}]},
        "many": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    }


def test_literals() -> None:
    assert set(t.Role.__args__) == {"user", "assistant"}  # type: ignore[attr-defined]
    assert len(t.LoggingLevel.__args__) == 8  # type: ignore[attr-defined]
    with pytest.raises(msgspec.ValidationError):
        t.decoder_for(t.SetLevelRequestParams).decode(b'{"level":"loud"}')
    for level in t.LoggingLevel.__args__:  # type: ignore[attr-defined]
        encoded = msgspec.json.encode(t.SetLevelRequestParams(level=level))
        assert t.decoder_for(t.SetLevelRequestParams).decode(encoded).level == level


def test_server_sent_enum_values_from_newer_servers_decode() -> None:
    """Values the schema lists today are not a closed set for what servers send."""
    tools = t.decoder_for(t.ListToolsResult).decode(
        b'{"tools":[{"name":"a","inputSchema":{},"icons":[{"src":"x","theme":"high-contrast"}],'
        b'"execution":{"taskSupport":"sometimes"}}],"cacheScope":"shared","ttlMs":5}'
    )
    assert tools.cache_scope == "shared"
    prompt = t.decoder_for(t.GetPromptResult).decode(
        b'{"messages":[{"role":"system","content":{"type":"text","text":"hi"}}]}'
    )
    assert prompt.messages[0].role == "system"
    log = t.decoder_for(t.LoggingMessageNotificationParams).decode(b'{"level":"trace","data":1}')
    assert log.level == "trace"


def test_annotation_audience_and_sampling_enums_from_newer_servers_decode() -> None:
    from trio_mcp.types import decoder_for

    result = decoder_for(trio_mcp.CallToolResult).decode(
        b'{"content":[{"type":"text","text":"x","annotations":{"audience":["robot","user"]}}]}'
    )
    assert result.content[0].annotations.audience == ["robot", "user"]  # type: ignore[union-attr]
    params = decoder_for(trio_mcp.CreateMessageRequestParams).decode(
        b'{"messages":[],"maxTokens":5,"includeContext":"everything",'
        b'"toolChoice":{"mode":"sometimes"}}'
    )
    assert params.include_context == "everything"


def test_progress_keeps_the_servers_integer() -> None:
    # float-typed fields turned {"progress": 4, "total": 10} into 4.0 / 10.0 (issue 37)
    dec = t.decoder_for(t.ProgressNotificationParams)
    whole = dec.decode(b'{"progressToken": "p", "progress": 4, "total": 10}')
    assert (whole.progress, whole.total) == (4, 10)
    assert type(whole.progress) is int and type(whole.total) is int
    part = dec.decode(b'{"progressToken": "p", "progress": 2.5, "total": 10.0}')
    assert type(part.progress) is float and type(part.total) is float
    assert msgspec.json.encode(whole) == b'{"progressToken":"p","progress":4,"total":10}'


def test_unset_is_public_in_trio_mcp_types() -> None:
    assert t.UNSET is msgspec.UNSET
    assert t.UnsetType is msgspec.UnsetType
    assert t.Tool(name="x", input_schema={}).title is t.UNSET

"""The modern Streamable HTTP header rules: value encoding and x-mcp-header annotations."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp._transports._headers import (
    MAX_SAFE_INTEGER,
    decode_header_value,
    encode_header_value,
    header_parameters,
    is_plain_header_value,
    param_headers,
    request_name,
    validate_tool_headers,
)


def tool(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    return {"name": "t", "inputSchema": schema}


# -- plain header values (Mcp-Method has no encoding) ------------------------------------------


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("tools/call", True),
        ("notifications/roots/list_changed", True),
        ("a b", True),
        ("", False),
        (" tools/call", False),
        ("tools/call ", False),
        ("t\u00f6ols/call", False),
        ("tools/call\r\nX-Evil: 1", False),
        ("tools\tcall", False),
        ("tools\x00", False),
    ],
)
def test_is_plain_header_value(value: str, plain: bool) -> None:
    assert is_plain_header_value(value) is plain


# -- value encoding: the spec's examples, exactly -----------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_spec_encoding_examples(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize(
    "value",
    ["a\tb", "trailing ", " leading", "\x7f", "\x00", "caf\u00e9", "a\r\nInjected: x"],
)
def test_unsafe_values_are_base64(value: str) -> None:
    encoded = encode_header_value(value)
    assert encoded.startswith("=?base64?")
    assert encoded.endswith("?=")
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize(
    "value", ["", "inner space ok", "file:///projects/app/config.json", "~!@#$%^&*()", "=?base64?"]
)
def test_safe_values_are_plain(value: str) -> None:
    assert encode_header_value(value) == value


def test_decode_rejects_a_malformed_sentinel() -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode_header_value("=?base64?not base64!?=")
    with pytest.raises(ValueError, match="malformed"):
        decode_header_value("=?base64?/w==?=")  # valid Base64, but not UTF-8


def test_request_name() -> None:
    assert request_name("tools/call", {"name": "echo"}) == "echo"
    assert request_name("prompts/get", {"name": "p"}) == "p"
    assert request_name("resources/read", {"uri": "file:///x"}) == "file:///x"
    assert request_name("tools/list", {"name": "x"}) is None
    assert request_name("tools/call", None) is None
    assert request_name("tools/call", {"name": 3}) is None


# -- validation ---------------------------------------------------------------------------------


def test_spec_example_tool_is_valid() -> None:
    spec_tool = tool(
        {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
        },
        required=["region", "query"],
    )
    assert validate_tool_headers(spec_tool) is None
    assert header_parameters(spec_tool) == {("region",): "Region"}


def test_tools_without_annotations_are_valid() -> None:
    assert validate_tool_headers({"name": "t"}) is None
    assert validate_tool_headers({"name": "t", "inputSchema": {"type": "object"}}) is None


def test_nested_properties_are_reachable() -> None:
    nested = tool(
        {
            "location": {
                "type": "object",
                "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}},
            }
        }
    )
    assert validate_tool_headers(nested) is None
    assert header_parameters(nested) == {("location", "zone"): "Zone"}


@pytest.mark.parametrize(
    ("schema_type", "valid"),
    [
        ("string", True),
        ("integer", True),
        ("boolean", True),
        (["string", "null"], True),
        ("number", False),
        ("object", False),
        ("array", False),
        (["string", "number"], False),
        (["null"], False),
        (None, False),
    ],
)
def test_only_primitive_types_may_be_annotated(schema_type: Any, valid: bool) -> None:
    prop: dict[str, Any] = {"x-mcp-header": "P"}
    if schema_type is not None:
        prop["type"] = schema_type
    reason = validate_tool_headers(tool({"p": prop}))
    assert (reason is None) is valid
    if not valid:
        assert reason is not None
        assert "'p'" in reason


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        ("Has Space", "token"),
        ("Line\nBreak", "token"),
        ("Carriage\rReturn", "token"),
        ("Colon:", "token"),
        ("Ünicode", "token"),
        ("(paren)", "token"),
        (42, "not a string"),
    ],
)
def test_annotation_must_be_a_token(name: Any, why: str) -> None:
    reason = validate_tool_headers(tool({"p": {"type": "string", "x-mcp-header": name}}))
    assert reason is not None
    assert why in reason


def test_token_characters_are_accepted() -> None:
    name = "A-z_0.9!#$%&'*+^`|~"
    assert validate_tool_headers(tool({"p": {"type": "string", "x-mcp-header": name}})) is None


def test_annotations_are_unique_ignoring_case() -> None:
    reason = validate_tool_headers(
        tool(
            {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"type": "string", "x-mcp-header": "REGION"},
            }
        )
    )
    assert reason is not None
    assert "duplicates" in reason


@pytest.mark.parametrize(
    "schema",
    [
        # on the root itself
        {"type": "object", "x-mcp-header": "Root"},
        # through items
        {
            "type": "object",
            "properties": {
                "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}
            },
        },
        # through composition keywords
        {
            "type": "object",
            "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}],
        },
        {
            "type": "object",
            "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}],
        },
        {
            "type": "object",
            "allOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}],
        },
        {"type": "object", "not": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        # through conditionals
        {"type": "object", "if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        {"type": "object", "then": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        {"type": "object", "else": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        # in definitions reached by $ref
        {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "string", "x-mcp-header": "A"}},
        },
        # through additionalProperties / patternProperties
        {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "A"}},
        {"type": "object", "patternProperties": {"^a": {"type": "string", "x-mcp-header": "A"}}},
    ],
)
def test_annotations_must_be_statically_reachable(schema: dict[str, Any]) -> None:
    reason = validate_tool_headers({"name": "bad", "inputSchema": schema})
    assert reason is not None
    assert "'bad'" in reason


def test_instance_data_is_not_an_annotation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "default": {"x-mcp-header": "NotAnAnnotation"},
                "examples": [{"x-mcp-header": "Nope"}],
                "enum": [{"x-mcp-header": "Nope"}],
                "const": {"x-mcp-header": "Nope"},
            },
            # a property *named* x-mcp-header is just a property
            "x-mcp-header": {"type": "string"},
        },
    }
    assert validate_tool_headers({"name": "t", "inputSchema": schema}) is None
    assert header_parameters({"name": "t", "inputSchema": schema}) == {}


# -- param_headers ------------------------------------------------------------------------------


def test_param_headers_convert_and_encode() -> None:
    annotated = tool(
        {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "where": {
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            },
            "query": {"type": "string"},
        }
    )
    headers = param_headers(
        annotated,
        {
            "region": "us-west1",
            "count": -7,
            "dry": False,
            "greeting": "Hello, 世界",
            "where": {"zone": "b"},
            "query": "SELECT 1",
        },
    )
    assert headers == {
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Count": "-7",
        "Mcp-Param-Dry": "false",
        "Mcp-Param-Greeting": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "Mcp-Param-Zone": "b",
    }


def test_param_headers_omit_missing_and_null_values() -> None:
    annotated = tool(
        {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": ["string", "null"], "x-mcp-header": "B"},
            "c": {"type": "object", "properties": {"d": {"type": "string", "x-mcp-header": "D"}}},
        }
    )
    assert param_headers(annotated, {"b": None, "c": "not an object"}) == {}
    assert param_headers(annotated, {"a": "x"}) == {"Mcp-Param-A": "x"}


def test_param_headers_integral_float_is_decimal() -> None:
    annotated = tool({"n": {"type": "integer", "x-mcp-header": "N"}})
    assert param_headers(annotated, {"n": 42.0}) == {"Mcp-Param-N": "42"}


def test_param_headers_safe_integer_range() -> None:
    annotated = tool({"n": {"type": "integer", "x-mcp-header": "N"}})
    assert param_headers(annotated, {"n": MAX_SAFE_INTEGER}) == {"Mcp-Param-N": str(2**53 - 1)}
    assert param_headers(annotated, {"n": -MAX_SAFE_INTEGER}) == {"Mcp-Param-N": str(1 - 2**53)}
    with pytest.raises(ValueError, match="safe integer range"):
        param_headers(annotated, {"n": 2**53})


def test_param_headers_reject_an_invalid_tool() -> None:
    with pytest.raises(ValueError, match="not integer, string or boolean"):
        param_headers(tool({"n": {"type": "number", "x-mcp-header": "N"}}), {"n": 1.5})

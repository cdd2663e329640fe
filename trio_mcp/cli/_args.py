"""Tool and prompt arguments from the command line, coerced and checked by the input schema.

Forms (mixable, later ones win): ``key=value`` (coerced by the property's schema),
``key:=<json>`` (a JSON value as is), ``key=@file`` (the file's text, coerced like a value)
and one JSON object (``'{"a": 1}'``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

__all__ = ["UsageError", "check_arguments", "parse_arguments"]

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true/false)",
    "array": "a JSON array",
    "object": "a JSON object",
    "null": "null",
}
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class UsageError(Exception):
    """The command line is wrong (exit status 2); the message says how."""


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _properties(schema: Mapping[str, Any] | None) -> Mapping[str, Any]:
    found: object = (schema or {}).get("properties")
    return cast("Mapping[str, Any]", found) if isinstance(found, Mapping) else {}


def _types(spec: Mapping[str, Any]) -> list[str]:
    """The JSON types a property accepts (``type``, a type list, or ``anyOf``/``oneOf``)."""
    found: object = spec.get("type")
    if isinstance(found, str):
        return [found]
    if isinstance(found, list):
        return [str(x) for x in cast("list[object]", found)]
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        options: object = spec.get(key)
        if isinstance(options, list):
            for option in cast("list[object]", options):
                if isinstance(option, Mapping):
                    out += _types(cast("Mapping[str, Any]", option))
    if not out and isinstance(spec.get("enum"), list):
        out = sorted({_json_type(v) for v in cast("list[object]", spec["enum"])})
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def expectation(spec: Mapping[str, Any]) -> str:
    """Say in words what a property's schema expects (for error messages)."""
    enum: object = spec.get("enum")
    if isinstance(enum, list):
        return "one of " + ", ".join(json.dumps(v) for v in cast("list[object]", enum))
    types = _types(spec)
    return " or ".join(_TYPE_WORDS.get(x, x) for x in types) if types else "any JSON value"


def _coerce_as(kind: str, text: str) -> tuple[bool, Any]:
    if kind == "string":
        return True, text
    if kind == "integer":
        try:
            return True, int(text)
        except ValueError:
            return False, None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return False, None
        if not math.isfinite(number):
            return False, None
        return True, int(number) if number.is_integer() and "." not in text else number
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True, True
        if text.lower() in _FALSE:
            return True, False
        return False, None
    if kind == "null":
        return (True, None) if text in ("null", "") else (False, None)
    if kind in ("array", "object"):
        try:
            value: Any = json.loads(text)
        except ValueError:
            return False, None
        return (True, value) if _json_type(value) == kind else (False, None)
    return False, None


def coerce(name: str, spec: Mapping[str, Any] | None, text: str) -> Any:
    """Turn the text of ``name=text`` into the JSON value the property's schema wants.

    Raises:
        UsageError: The text fits none of the types the schema allows.
    """
    if spec is None:  # not in the schema: JSON if it parses as JSON, else a string
        try:
            return json.loads(text)
        except ValueError:
            return text
    types = _types(spec)
    if not types:
        try:
            return json.loads(text)
        except ValueError:
            return text
    # Prefer the most specific reading: integer before number before string.
    order = ["null", "boolean", "integer", "number", "array", "object", "string"]
    for kind in sorted(types, key=lambda k: order.index(k) if k in order else len(order)):
        ok, value = _coerce_as(kind, text)
        if ok:
            return value
    raise UsageError(f"argument {name!r}: expected {expectation(spec)}, got {text!r}")


def parse_arguments(items: Sequence[str], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Build the arguments object from the command line's argument words.

    Args:
        items: ``key=value``, ``key:=json``, ``key=@file`` words, or one JSON object.
        schema: The tool's ``inputSchema`` (``None``: unknown; values read as JSON or text).

    Returns:
        The arguments, coerced (not yet checked: see :func:`check_arguments`).

    Raises:
        UsageError: A word has none of the forms, a file cannot be read, a value does not
            fit its type.
    """
    props = _properties(schema)
    out: dict[str, Any] = {}
    for item in items:
        if item.lstrip().startswith("{"):
            try:
                value: Any = json.loads(item)
            except ValueError as exc:
                raise UsageError(f"arguments {item!r} are not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise UsageError("JSON arguments must be an object")
            out.update(cast("dict[str, Any]", value))
            continue
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(
                f"argument {item!r}: use key=value, key:=<json>, key=@file or a JSON object"
            )
        if key.endswith(":"):
            key = key[:-1]
            try:
                out[key] = json.loads(text)
            except ValueError as exc:
                raise UsageError(f"argument {key!r}: {text!r} is not JSON ({exc})") from None
            continue
        if text.startswith("@") and len(text) > 1:
            try:
                text = Path(text[1:]).expanduser().read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"argument {key!r}: cannot read {text[1:]!r}: {exc}") from None
        spec: object = props.get(key)
        out[key] = coerce(
            key, cast("Mapping[str, Any]", spec) if isinstance(spec, Mapping) else None, text
        )
    return out


def _problem(spec: Mapping[str, Any], value: Any) -> str | None:
    types = _types(spec)
    actual = _json_type(value)
    if types and actual not in types and not (actual == "integer" and "number" in types):
        return f"expected {expectation(spec)}, got {json.dumps(value)}"
    enum: object = spec.get("enum")
    if isinstance(enum, list) and value not in cast("list[object]", enum):
        return f"expected {expectation(spec)}, got {json.dumps(value)}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = spec.get("minimum"), spec.get("maximum")
        if isinstance(low, (int, float)) and value < low:
            return f"must be at least {low}, got {value}"
        if isinstance(high, (int, float)) and value > high:
            return f"must be at most {high}, got {value}"
    return None


def check_arguments(
    tool: str, schema: Mapping[str, Any] | None, arguments: Mapping[str, Any]
) -> None:
    """Check arguments against the top level of a tool's input schema.

    Checks required properties, unknown ones (when ``additionalProperties`` is false), each
    value's type, ``enum`` and numeric range; the server checks the rest.

    Raises:
        UsageError: One line per problem, each with what the schema expects.
    """
    if not isinstance(schema, Mapping):
        return
    props = _properties(schema)
    problems: list[str] = []
    required: object = schema.get("required")
    if isinstance(required, list):
        for name in cast("list[object]", required):
            if isinstance(name, str) and name not in arguments:
                spec: object = props.get(name)
                want = (
                    expectation(cast("Mapping[str, Any]", spec))
                    if isinstance(spec, Mapping)
                    else "a value"
                )
                problems.append(f"{name}: required ({want})")
    for name, value in arguments.items():
        spec = props.get(name)
        if not isinstance(spec, Mapping):
            if schema.get("additionalProperties") is False:
                known = ", ".join(props) or "none"
                problems.append(f"{name}: unknown argument (the tool takes: {known})")
            continue
        problem = _problem(cast("Mapping[str, Any]", spec), value)
        if problem:
            problems.append(f"{name}: {problem}")
    if problems:
        raise UsageError(f"invalid arguments for {tool!r}:\n  " + "\n  ".join(problems))

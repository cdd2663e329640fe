"""Tool and prompt arguments from the command line, coerced and checked by the input schema.

Forms (mixable, later ones win): ``key=value`` (coerced by the property's schema),
``key:=<json>`` (a JSON value as is), ``key=@file`` (the file's text, coerced like a value),
one JSON object (``'{"a": 1}'``) and a whole JSON object from a file (``@args.json``, or
``@-`` for stdin in one-shot commands).

Schemas are read with their local ``$ref`` (``#/$defs/...``, ``#/definitions/...``)
inlined first (`inline_refs()`), bounded in depth and size so cyclic or exploding
references end as "any value".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

__all__ = [
    "SERVER_COMMANDS",
    "HelpFormatter",
    "UnknownName",
    "UsageError",
    "argument_parts",
    "check_arguments",
    "close_matches",
    "did_you_mean",
    "inline_refs",
    "load_argument_files",
    "parse_arguments",
    "read_arguments",
]

SERVER_COMMANDS = (
    "info",
    "tools",
    "call",
    "resources",
    "templates",
    "read",
    "prompts",
    "prompt",
    "ping",
)
"""The commands that talk to a server, in the order help lists them: a one-shot command after
the target, and a word of the interactive mode."""

VALUE_OPTIONS = frozenset(
    {
        "--protocol",
        "--timeout",
        "--config",
        "--env",
        "-e",
        "--cwd",
        "--header",
        "-H",
        "--log-level",
        "--output",
    }
)
"""The command line's options that take a value (the word after them is that value): the parser and
shell completion both skip over it."""

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


class HelpFormatter(argparse.HelpFormatter):
    """Help that fits the terminal (at most 80 columns) and never splits a word.

    Paragraphs of the description and epilog are wrapped at spaces; lines that start
    with two spaces (examples) are kept as written.
    """

    def __init__(self, prog: str) -> None:
        import shutil  # (argparse imports it too: no cost)

        width = min(shutil.get_terminal_size().columns, 80) - 2
        super().__init__(prog, width=max(width, 40), max_help_position=26)

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(
            " ".join(text.split()), width, break_long_words=False, break_on_hyphens=False
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out: list[str] = []
        for line in text.splitlines():
            if line.startswith("  ") or not line.strip():
                out.append(indent + line)
            else:
                out += textwrap.wrap(
                    line,
                    width,
                    initial_indent=indent,
                    subsequent_indent=indent,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
        return "\n".join(out) + "\n"


class UsageError(Exception):
    """The command line is wrong (exit status 2); the message says how."""


class UnknownName(UsageError):
    """The server has no tool (or prompt) of that name (exit status 1, like a server error).

    A subclass of `UsageError` so the interactive mode reports it and goes on; the
    exit status follows the server's answer: the same call sent to the server fails with an
    error answer (status 1), so the check made before sending it must not say otherwise.
    """


# -- local $ref ---------------------------------------------------------------------------

_REF_DEPTH = 16  # references followed on one path
_REF_BUDGET = 5_000  # nodes copied in all (a schema whose refs explode stops growing)


def _pointer(root: Mapping[str, Any], ref: str) -> object:
    """The node a local JSON pointer (``#/$defs/Name``) names, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: object = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = cast("Mapping[str, object]", node).get(part)
        elif isinstance(node, list) and part.isdigit():
            items = cast("list[object]", node)
            node = items[int(part)] if int(part) < len(items) else None
        else:
            return None
    return node


def inline_refs(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Return ``schema`` with its local ``$ref`` replaced by what they point to.

    Keys next to a ``$ref`` win over the target's (``{"$ref": ..., "description": ...}``);
    the parts of an ``allOf`` are merged into their node the same way (what pydantic writes
    for a described model field).
    A reference that is remote, dangling, cyclic, deeper than 16 or past a budget of 5,000
    copied nodes becomes ``{}`` (any value): describing and checking arguments never
    recurses without end, and a schema never grows without bound.
    """
    if not isinstance(schema, Mapping):
        return schema
    root = schema
    budget = [_REF_BUDGET]

    def walk(node: object, trail: tuple[str, ...]) -> object:
        budget[0] -= 1
        if budget[0] < 0:
            return {}
        if isinstance(node, list):
            return [walk(item, trail) for item in cast("list[object]", node)]
        if not isinstance(node, Mapping):
            return node
        mapping = cast("Mapping[str, Any]", node)
        ref: object = mapping.get("$ref")
        if isinstance(ref, str):
            target = _pointer(root, ref)
            siblings = {k: v for k, v in mapping.items() if k != "$ref"}
            if ref in trail or len(trail) >= _REF_DEPTH or not isinstance(target, Mapping):
                return walk(siblings, trail)
            inlined = walk(cast("Mapping[str, Any]", target), (*trail, ref))
            merged = dict(cast("Mapping[str, Any]", inlined))
            merged.update(cast("Mapping[str, Any]", walk(siblings, trail)))
            return merged
        out = {
            k: (v if k in ("$defs", "definitions") else walk(v, trail)) for k, v in mapping.items()
        }
        parts: object = out.get("allOf")
        if isinstance(parts, list) and all(
            isinstance(p, Mapping) for p in cast("list[object]", parts)
        ):
            combined: dict[str, Any] = {}  # allOf: every part applies; the node's own keys win
            for part in cast("list[Mapping[str, Any]]", parts):
                combined.update(part)
            combined.update({k: v for k, v in out.items() if k != "allOf"})
            return combined
        return out

    return cast("Mapping[str, Any]", walk(root, ()))


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _properties(schema: Mapping[str, Any] | None) -> Mapping[str, Any]:
    found: object = (schema or {}).get("properties")
    return cast("Mapping[str, Any]", found) if isinstance(found, Mapping) else {}


def accepted_types(spec: Mapping[str, Any]) -> list[str]:
    """The JSON types a property accepts (``type``, a type list, ``anyOf``/``oneOf``/``allOf``)."""
    found: object = spec.get("type")
    if isinstance(found, str):
        return [found]
    if isinstance(found, list):
        return [str(x) for x in cast("list[object]", found)]
    if "const" in spec:
        return [_json_type(spec["const"])]
    out: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        options: object = spec.get(key)
        if isinstance(options, list):
            for option in cast("list[object]", options):
                if isinstance(option, Mapping):
                    out += accepted_types(cast("Mapping[str, Any]", option))
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


def argument_parts(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``[("text", ": string*"), ("seconds", ": number = 1.0")]`` for a tool's input schema.

    Each pair is an argument's name and what follows it (``*``: required), so a layout can
    keep the name whole.
    """
    schema = inline_refs(schema) or {}
    props_obj: object = schema.get("properties")
    props: Mapping[str, Any] = (
        cast("Mapping[str, Any]", props_obj) if isinstance(props_obj, Mapping) else {}
    )
    required_obj: object = schema.get("required")
    required = cast("list[str]", required_obj) if isinstance(required_obj, list) else []
    parts: list[tuple[str, str]] = []
    for name, spec_obj in props.items():
        spec: Mapping[str, Any] = (
            cast("Mapping[str, Any]", spec_obj) if isinstance(spec_obj, Mapping) else {}
        )
        kind: Any = "|".join(dict.fromkeys(accepted_types(spec))) or "any"
        if isinstance(spec.get("enum"), list):
            kind = "|".join(json.dumps(v) for v in cast("list[object]", spec["enum"]))
        text = f": {kind}" + ("*" if name in required else "")
        if "default" in spec:
            text += f" = {json.dumps(spec['default'])}"
        parts.append((str(name), text))
    return parts


def expectation(spec: Mapping[str, Any]) -> str:
    """Say in words what a property's schema expects (for error messages)."""
    enum: object = spec.get("enum")
    if isinstance(enum, list):
        return "one of " + ", ".join(json.dumps(v) for v in cast("list[object]", enum))
    types = accepted_types(spec)
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
    types = accepted_types(spec)
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
        items: ``key=value``, ``key:=json``, ``key=@file`` words, JSON objects, or
            ``@file`` (a file holding a JSON object; ``@-`` is stdin, read beforehand by
            `load_argument_files()`).
        schema: The tool's ``inputSchema`` (``None``: unknown; values read as JSON or text).

    Returns:
        The arguments, coerced (not yet checked: see `check_arguments()`).

    Raises:
        UsageError: Words have none of the forms, a file cannot be read or holds no JSON
            object, values do not fit their type: every such word is named, one a line.
    """
    out, failed = _parse(items, schema)
    if failed:
        raise UsageError("\n  ".join(failed.values()))
    return out


def read_arguments(
    tool: str, items: Sequence[str], schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Parse the argument words and check them against the schema, every problem at once.

    Raises:
        UsageError: One line per problem (a word of no form, a value of the wrong type, a
            required argument missing, ...), each with what the schema expects.
    """
    out, failed = _parse(items, schema)
    check_arguments(tool, schema, out, failed=failed)
    return out


def _parse(
    items: Sequence[str], schema: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The arguments that parse, and a message for each word that does not (by its key)."""
    props = _properties(inline_refs(schema))
    out: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for item in items:
        key = item.partition("=")[0].removesuffix(":")
        try:
            out.update(_parse_word(item, props))
        except UsageError as exc:
            failed[key or item] = str(exc)
            out.pop(key, None)
        else:
            failed.pop(key, None)  # a later word for the same key wins
    return out, failed


def _parse_word(item: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments one word gives."""
    if item.startswith("@"):
        return _arguments_file(item[1:])
    if item.lstrip().startswith("{"):
        try:
            value: Any = json.loads(item)
        except ValueError as exc:
            raise UsageError(f"arguments {item!r} are not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise UsageError("JSON arguments must be an object")
        return cast("dict[str, Any]", value)
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise UsageError(
            f"argument {item!r}: use key=value, key:=<json>, key=@file or a JSON object"
        )
    if key.endswith(":"):
        key = key[:-1]
        try:
            return {key: json.loads(text)}
        except ValueError as exc:
            raise UsageError(f"argument {key!r}: {text!r} is not JSON ({exc})") from None
    if text.startswith("@") and len(text) > 1:
        try:
            text = Path(text[1:]).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"argument {key!r}: cannot read {text[1:]!r}: {exc}") from None
    spec: object = props.get(key)
    return {
        key: coerce(
            key, cast("Mapping[str, Any]", spec) if isinstance(spec, Mapping) else None, text
        )
    }


def _json_object(text: str, where: str) -> dict[str, Any]:
    try:
        value: Any = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{where} must hold a JSON object, not {_json_type(value)}")
    return cast("dict[str, Any]", value)


def _arguments_file(path: str) -> dict[str, Any]:
    """The JSON object in the file ``path`` (the ``@path`` form)."""
    if path == "-":
        raise UsageError("@- (arguments from stdin) works in one-shot commands only")
    if not path:
        raise UsageError("@ needs a file name: @args.json, or @- for stdin")
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(f"cannot read the arguments file {path!r}: {reason}") from None
    return _json_object(text, f"the arguments file {path!r}")


def load_argument_files(items: Sequence[str], stdin: Any = None) -> list[str]:
    """Read every ``@file`` and ``@-`` word once, before anything starts.

    Each becomes the JSON text of its object, so later parsing (which may happen twice:
    before the server starts and with the listed schema) never reads stdin again.

    Args:
        items: The argument words.
        stdin: Where ``@-`` reads (default: ``sys.stdin``).

    Raises:
        UsageError: A file is missing or unreadable, its JSON is invalid or no object,
            ``@-`` appears twice.
    """
    out: list[str] = []
    seen_stdin = False
    for item in items:
        if item == "@-":
            if seen_stdin:
                raise UsageError("@- (arguments from stdin) can be given once")
            seen_stdin = True
            stream = stdin if stdin is not None else sys.stdin
            try:
                text = stream.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"cannot read the arguments from stdin: {exc}") from None
            out.append(json.dumps(_json_object(text, "the arguments on stdin")))
        elif item.startswith("@"):
            out.append(json.dumps(_arguments_file(item[1:])))
        else:
            out.append(item)
    return out


def _problem(spec: Mapping[str, Any], value: Any) -> str | None:
    types = accepted_types(spec)
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
    tool: str,
    schema: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
    *,
    failed: Mapping[str, str] | None = None,
) -> None:
    """Check arguments against the top level of a tool's input schema.

    Checks required properties, unknown ones (when ``additionalProperties`` is false), each
    value's type, ``enum`` and numeric range; the server checks the rest. Every problem is
    reported at once.

    Args:
        tool: The tool's name (for the message).
        schema: Its input schema.
        arguments: The arguments parsed.
        failed: Words that did not parse, by argument name, with their message: reported
            first, and not reported missing again.

    Raises:
        UsageError: One line per problem, each with what the schema expects.
    """
    problems: list[str] = list((failed or {}).values())
    schema = inline_refs(schema)
    if isinstance(schema, Mapping):
        problems += _schema_problems(schema, arguments, set(failed or ()))
    if len(problems) == 1 and failed:  # one word of the command line: its own message
        raise UsageError(problems[0])
    if problems:
        raise UsageError(f"invalid arguments for {tool!r}:\n  " + "\n  ".join(problems))


def _schema_problems(
    schema: Mapping[str, Any], arguments: Mapping[str, Any], failed: set[str]
) -> list[str]:
    props = _properties(schema)
    problems: list[str] = []
    required: object = schema.get("required")
    if isinstance(required, list):
        for name in cast("list[object]", required):
            if isinstance(name, str) and name not in arguments and name not in failed:
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
                hint = did_you_mean(name, props)
                problems.append(f"{name}: unknown argument{hint} (the tool takes: {known})")
            continue
        problem = _problem(cast("Mapping[str, Any]", spec), value)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates that look like a misspelling of ``word``, best first."""
    import difflib  # (only on an error path)

    pool = list(candidates)
    found = difflib.get_close_matches(word, pool, n=n, cutoff=0.6)
    lowered = word.lower()
    for candidate in pool:  # a prefix or a different case counts too
        if candidate not in found and (
            candidate.lower() == lowered
            or (len(word) >= 3 and candidate.lower().startswith(lowered))
        ):
            found.append(candidate)
    return found[:n]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` when a candidate looks like ``word``, else ``""``."""
    found = close_matches(word, candidates)
    if not found:
        return ""
    return " (did you mean " + " or ".join(repr(f) for f in found) + "?)"

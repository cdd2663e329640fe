"""Validating tool results against their ``outputSchema``, and typed decoding.

The spec says a client SHOULD validate ``structuredContent`` against the tool's
``outputSchema``. The official SDK does so strictly and drops the result; trio_mcp keeps the
result and reports the outcome on
[`CallToolResult.validation`][trio_mcp.types.CallToolResult.validation] (or raises
[`OutputValidationError`][trio_mcp.validation.OutputValidationError], carrying the result, in strict
mode).

Schemas are compiled with `jsonschema-rs <https://pypi.org/project/jsonschema-rs/>`_ (the
``validation`` extra), imported on first use: draft 2020-12 by default, older drafts when
``$schema`` names them, and never any network access (remote ``$ref`` fails to compile).

A server's ``outputSchema`` is compiled without blocking the event loop: one of at most
4 KiB (as JSON; compiling takes at most ~0.3 ms) is compiled inline, a larger one
in a worker thread (``trio.to_thread``), and one over `MAX_OUTPUT_SCHEMA_SIZE` is not
compiled at all: the tool's results are reported ``"unchecked"`` and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeVar, cast

import msgspec
import trio

from ._exceptions import OutputValidationError, SchemaError

__all__ = [
    "MAX_OUTPUT_SCHEMA_SIZE",
    "CompiledSchema",
    "OutputValidation",
    "SchemaViolation",
    "compile_schema",
    "decode_structured",
]

logger = logging.getLogger("trio_mcp")
T = TypeVar("T")

ValidationStatus = Literal["valid", "invalid", "missing", "unchecked"]
_MAX_ERRORS = 20


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    """One way a value fails its schema.

    Attributes:
        path: JSON Pointer to the failing part of the value (``""`` for the whole value).
        message: What is wrong, e.g. ``'"x" is not of type "integer"'``.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


@dataclass(frozen=True, slots=True)
class OutputValidation:
    """The outcome of validating a tool result against the tool's ``outputSchema``.

    Attributes:
        status: ``"valid"``; ``"invalid"`` (see `errors`); ``"missing"`` (the tool
            has an ``outputSchema`` but the result has no ``structuredContent``); or
            ``"unchecked"`` (no schema known for the tool, an ``isError`` result, or
            validation impossible: see `reason`).
        errors: The violations (at most 20), for ``"invalid"``.
        reason: Why the result was not checked, for ``"unchecked"``.
    """

    status: ValidationStatus
    errors: tuple[SchemaViolation, ...] = ()
    reason: str = ""

    @property
    def ok(self) -> bool:
        """False only for ``"invalid"`` and ``"missing"``."""
        return self.status in ("valid", "unchecked")

    def describe(self) -> str:
        """A one-line human description of the outcome."""
        if self.status == "invalid":
            return "structuredContent does not match outputSchema: " + "; ".join(
                str(error) for error in self.errors
            )
        if self.status == "missing":
            return "the tool has an outputSchema but the result has no structuredContent"
        if self.status == "unchecked":
            return f"not checked: {self.reason}"
        return "structuredContent matches outputSchema"


class _Validator(Protocol):
    def iter_errors(self, instance: Any, /) -> Any: ...  # pragma: no cover


@dataclass(frozen=True, slots=True, eq=False)
class CompiledSchema:
    """A JSON Schema compiled once, ready to validate many values.

    Build with [`compile_schema()`][trio_mcp.validation.compile_schema].

    Attributes:
        schema: The schema as given.
    """

    schema: Mapping[str, Any]
    _validator: _Validator = field(repr=False)

    def violations(self, value: Any) -> tuple[SchemaViolation, ...]:
        """Every way ``value`` fails the schema (at most 20); empty when it is valid.

        Args:
            value: A JSON value (decoded: dict, list, str, int, float, bool or None).
        """
        found: list[SchemaViolation] = []
        for error in self._validator.iter_errors(value):
            path = "".join(
                "/" + str(part).replace("~", "~0").replace("/", "~1")
                for part in error.instance_path
            )
            found.append(SchemaViolation(path, str(error.message)))
            if len(found) >= _MAX_ERRORS:
                break
        return tuple(found)

    def validate(self, value: Any) -> OutputValidation:
        """Validate ``value``; never raises for an invalid value.

        Args:
            value: A JSON value.

        Returns:
            An [`OutputValidation`][trio_mcp.validation.OutputValidation] with status ``"valid"`` or
                ``"invalid"``.
        """
        errors = self.violations(value)
        return OutputValidation("invalid", errors) if errors else OutputValidation("valid")


def _jsonschema_rs() -> Any:
    try:
        import jsonschema_rs  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise ModuleNotFoundError(
            "validating JSON Schemas needs jsonschema-rs: pip install 'trio-mcp[validation]'"
        ) from exc
    return jsonschema_rs


def validator_available() -> bool:
    """Whether the validator library (``jsonschema-rs``) can be imported."""
    try:
        _jsonschema_rs()
    except ModuleNotFoundError:
        return False
    return True


def compile_schema(schema: Mapping[str, Any] | bool) -> CompiledSchema:
    """Compile a JSON Schema (2020-12 by default; older drafts named by ``$schema``).

    Remote ``$ref`` targets are never fetched: a schema that needs one does not compile.

    Args:
        schema: The schema, decoded (a dict, or ``True``/``False``).

    Returns:
        The compiled schema.

    Raises:
        SchemaError: The schema is not a valid JSON Schema.
        ModuleNotFoundError: ``jsonschema-rs`` is not installed (the ``validation`` extra).
    """
    library = _jsonschema_rs()
    if not isinstance(schema, (Mapping, bool)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise SchemaError(f"a JSON Schema must be an object or a boolean, not {schema!r}", schema)
    given: Any = dict(schema) if isinstance(schema, Mapping) else schema
    try:
        validator = library.validator_for(given, offline=True)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SchemaError(f"the JSON Schema does not compile: {first}", schema) from exc
    return CompiledSchema(cast("Mapping[str, Any]", given), validator)


MAX_OUTPUT_SCHEMA_SIZE: Final = 256 * 1024
"""The largest server-supplied ``outputSchema`` compiled, in bytes of JSON (256 KiB, about 6,000
properties). A larger one is not compiled: the tool's results go unchecked."""
# Up to this size (bytes of JSON, ~100 properties) a schema compiles in at most ~0.3 ms:
# inline, as the hop to a thread (~50 us, and the compiling thread still takes the GIL
# part of the time) would save little. Measured: 230 B 10 us, 1.9 KB 0.1-0.3 ms,
# 15 KB 1.2 ms, 233 KB 17 ms, 893 KB 95 ms (one core of the 2-core dev machine).
_INLINE_COMPILE_SIZE: Final = 4 * 1024
_size_encoder: Final = msgspec.json.Encoder()


def _server_schema_size(schema: Any) -> int:
    """The schema's size as JSON; [`SchemaError`][trio_mcp.validation.SchemaError] when over the
    limit."""
    try:
        size = len(_size_encoder.encode(schema))
    except (TypeError, ValueError, OverflowError) as exc:
        raise SchemaError(f"the JSON Schema is not JSON: {exc}", schema) from exc
    if size > MAX_OUTPUT_SCHEMA_SIZE:
        raise SchemaError(
            f"the JSON Schema is {size} bytes, over the {MAX_OUTPUT_SCHEMA_SIZE}-byte limit "
            "for server-supplied schemas: not compiled, results are not validated",
            schema,
        )
    return size


def compile_server_schema(schema: Any) -> CompiledSchema:
    """Compile a server-supplied schema inline, within `MAX_OUTPUT_SCHEMA_SIZE`.

    Raises:
        SchemaError: The schema does not compile or is over the size limit.
        ModuleNotFoundError: ``jsonschema-rs`` is not installed.
    """
    _server_schema_size(schema)
    return compile_schema(schema)


async def compile_server_schema_async(schema: Any) -> CompiledSchema:
    """Compile a server-supplied schema without blocking the event loop (a checkpoint).

    Small schemas compile inline; larger ones in a worker thread (not abandoned when
    cancelled: the compilation is bounded by the size limit).

    Raises:
        SchemaError: The schema does not compile or is over the size limit.
        ModuleNotFoundError: ``jsonschema-rs`` is not installed.
    """
    size = _server_schema_size(schema)
    if size <= _INLINE_COMPILE_SIZE:
        await trio.lowlevel.checkpoint()
        return compile_schema(schema)
    return await trio.to_thread.run_sync(compile_schema, schema)


def decode_structured(result: Any, tp: type[T]) -> T:
    """Decode a tool result's ``structured_content`` into ``tp``.

    Args:
        result: A [`CallToolResult`][trio_mcp.types.CallToolResult].
        tp: A msgspec Struct, dataclass, TypedDict or any type msgspec converts to.

    Returns:
        The decoded value.

    Raises:
        OutputValidationError: There is no ``structuredContent``, or it does not fit ``tp``.
    """
    validation = result.validation or OutputValidation("unchecked", reason="not validated")
    structured = result.structured_content
    if structured is msgspec.UNSET:
        raise OutputValidationError(
            f"cannot decode the result into {_name(tp)}: it has no structuredContent",
            result,
            validation,
        )
    try:
        return msgspec.convert(structured, tp)
    except msgspec.ValidationError as exc:
        raise OutputValidationError(
            f"cannot decode structuredContent into {_name(tp)}: {exc}", result, validation
        ) from exc


def _name(tp: Any) -> str:
    return str(getattr(tp, "__qualname__", tp))

"""Tool results checked against their ``outputSchema``, and the JSON Schema compiler.

``call_tool`` checks a result's ``structuredContent`` against its tool's ``outputSchema``
and reports the outcome as an [`OutputValidation`][trio_mcp.validation.OutputValidation] on
``CallToolResult.validation`` (each problem a
[`SchemaViolation`][trio_mcp.validation.SchemaViolation]); in strict mode a result that does not
match raises [`OutputValidationError`][trio_mcp.validation.OutputValidationError]. Both are
re-exported from ``trio_mcp`` too. [`compile_schema()`][trio_mcp.validation.compile_schema] compiles
a JSON Schema of your own once into a [`CompiledSchema`][trio_mcp.validation.CompiledSchema]; a
schema that does not compile raises [`SchemaError`][trio_mcp.validation.SchemaError]. Schemas
compile with jsonschema-rs (the ``validation`` extra), imported on first use.
"""

from __future__ import annotations

from ._exceptions import OutputValidationError as OutputValidationError
from ._exceptions import SchemaError as SchemaError
from ._public import publish as _publish
from ._validation import CompiledSchema as CompiledSchema
from ._validation import OutputValidation as OutputValidation
from ._validation import SchemaViolation as SchemaViolation
from ._validation import compile_schema as compile_schema

__all__ = [
    "CompiledSchema",
    "OutputValidation",
    "OutputValidationError",
    "SchemaError",
    "SchemaViolation",
    "compile_schema",
]


_publish(__name__, globals(), __all__)

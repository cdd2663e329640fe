"""What a session knows of the server's tools, and the rules it applies with it.

One `ToolBook` per session keeps, from the tool listings:

* the **header rules** of modern Streamable HTTP: a tool whose ``x-mcp-header``
  annotations break the spec's rules is dropped from a listing (and logged); the tools
  kept get their ``Mcp-Param-*`` headers when called;
* the **output schemas** of the last listing, compiled once per tool (off the event loop
  when large), and the check of each tool result against its schema
  (``output_validation="report" | "strict" | "off"``);
* every tool ever listed, for its ``execution.taskSupport`` (2025-11-25 tasks).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET

from . import types as t
from ._exceptions import OutputValidationError, SchemaError
from ._toolsearch import ToolIndex
from ._transports._headers import may_hold_annotation, param_headers, validate_tool_headers
from ._validation import (
    CompiledSchema,
    OutputValidation,
    compile_server_schema,
    compile_server_schema_async,
)

__all__ = ["ListingScan", "ToolBook"]

logger = logging.getLogger("trio_mcp")

# The verdicts of a result that is not checked, made once (one per call would cost more than
# the rest of the check): the caller knows the tool's name.
_NOT_LISTED: Final = OutputValidation(
    "unchecked", reason="no outputSchema known for this tool (list_tools() has not listed it)"
)
_NO_SCHEMA: Final = OutputValidation("unchecked", reason="the tool has no outputSchema")
_IS_ERROR: Final = OutputValidation("unchecked", reason="an isError result is not validated")


class ListingScan:
    """Whether every page of one listing came as bytes that cannot spell an annotation.

    Called with the bytes each page was decoded from (``None``: a page whose bytes were not
    seen, from the cache). A listing none of whose pages may hold the name
    (``may_hold_annotation`` of its bytes is False) has no ``x-mcp-header`` anywhere, so
    the header rules keep all of its tools and record none: exactly what the full check
    finds, at the cost of one pass over the bytes instead of a walk of every schema.
    """

    __slots__ = ("clean",)

    def __init__(self) -> None:
        self.clean = True
        """no page so far could hold an annotation"""

    def __call__(self, raw: msgspec.Raw | None) -> None:
        if self.clean and (raw is None or may_hold_annotation(memoryview(raw))):
            self.clean = False


class ToolBook:
    """One session's knowledge of the server's tools: header rules, schemas, task support."""

    __slots__ = (
        "header_wire",
        "known",
        "listing",
        "mode",
        "output_schemas",
        "search_index",
        "validators",
    )

    def __init__(self, output_validation: str) -> None:
        #: ``output_validation``: "report", "strict" or "off"
        self.mode = output_validation
        self.header_wire: dict[str, dict[str, Any]] = {}
        """the tools' wire form (name, inputSchema) of those with annotations, by name"""
        self.listing: tuple[list[t.Tool], list[int]] | None = None
        """the last listing checked, and the positions of the tools it kept"""
        # the tools of the last listing by name, for their outputSchema (compiled lazily,
        # once per tool); both dropped when the tool list changes.
        self.output_schemas: dict[str, t.Tool] = {}
        self.validators: dict[str, CompiledSchema | SchemaError] = {}
        # every tool ever listed, by name (kept when the list changes), for its
        # execution.taskSupport (2025-11-25)
        self.known: dict[str, t.Tool] = {}
        self.search_index: ToolIndex | None = None
        """the last full listing's search index (search_tools); None once the list changed"""

    # -- listings ------------------------------------------------------------------------

    def forget_listing(self) -> None:
        """The tool list changed: its tools' output schemas, validators and index go."""
        self.output_schemas = {}
        self.validators = {}
        self.search_index = None

    def remember_listed(self, tools: Iterable[t.Tool]) -> None:
        """Keep listed tools by name, for their output schemas and their task support.

        (The tools themselves: both are read when a tool is called.)
        """
        listed = {tool.name: tool for tool in tools}
        self.output_schemas.update(listed)
        self.known.update(listed)
        validators = self.validators
        if validators:  # (empty after a whole listing: nothing compiled to drop)
            for name in listed:
                validators.pop(name, None)

    # -- header rules (x-mcp-header / Mcp-Param) -----------------------------------------

    def check_tool_headers(self, tools: list[t.Tool], *, clean: bool = False) -> list[t.Tool]:
        """Drop tools with invalid x-mcp-header annotations; keep the rest in wire form.

        ``clean``: the listing's bytes cannot hold an annotation (`ListingScan`), so
        every tool is kept and none has header rules.
        """
        if clean:
            self.header_wire = {}
            self.listing = None
            return tools
        checked = self.listing
        if checked is not None and checked[0] == tools:
            # the same listing as last time (the usual case): the same verdicts, without
            # encoding every schema again (comparing costs about half as much)
            kept_at = checked[1]
            return tools if len(kept_at) == len(tools) else [tools[i] for i in kept_at]
        kept = self.checked_tool_headers(tools)
        kept_ids = {id(tool) for tool in kept}
        kept_at = [i for i, tool in enumerate(tools) if id(tool) in kept_ids]
        self.listing = (list(tools), kept_at)  # (a copy: the caller owns it)
        return kept

    def checked_tool_headers(self, tools: list[t.Tool], *, more: bool = False) -> list[t.Tool]:
        """The tools whose annotations are valid; records their wire form for calls.

        ``more`` adds to what earlier pages of the same listing recorded.
        """
        if not more:
            self.header_wire = {}
        wires = self.header_wire
        kept: list[t.Tool] = []
        if b"x-mcp-header" not in msgspec.json.encode([tool.input_schema for tool in tools]):
            return tools  # nothing to check (one encode costs far less than the walk)
        for tool in tools:
            # what the header rules read (not the whole tool: no to_builtins per listing)
            wire: dict[str, Any] = {"name": tool.name, "inputSchema": tool.input_schema}
            reason = validate_tool_headers(wire)
            if reason is None:
                kept.append(tool)
                wires[tool.name] = wire
            else:
                logger.warning(
                    "dropping tool %r: invalid x-mcp-header annotation: %s", tool.name, reason
                )
        return kept

    def checked_page(
        self, page: t.ListToolsResult, *, more: bool, clean: bool = False
    ) -> t.ListToolsResult:
        """One page of a listing under the header rules (``more``: not the first page;
        ``clean``: its bytes cannot hold an annotation, see `ListingScan`)."""
        # the same rules as list_tools, page by page (the whole-listing memo no longer holds)
        self.listing = None
        if clean:
            if not more:
                self.header_wire = {}
            return page
        kept = self.checked_tool_headers(page.tools, more=more)
        return page if kept is page.tools else msgspec.structs.replace(page, tools=kept)

    def param_headers(self, name: str, arguments: Mapping[str, Any]) -> Mapping[str, str] | None:
        """The ``Mcp-Param-*`` headers of a call of ``name`` (None when it has none)."""
        tool = self.header_wire.get(name)
        if tool is None:
            return None
        return param_headers(tool, dict(arguments))

    # -- output validation ---------------------------------------------------------------

    async def prepare_output_schema(self, name: str) -> None:
        """Compile the tool's ``outputSchema`` off the event loop, once.

        Called before the request is sent (a cancellation then loses nothing). Large
        schemas compile in a worker thread, oversized ones not at all (see
        ``_validation``); `validate_output()` then finds the result ready. No
        checkpoint when there is nothing to compile.
        """
        tool = self.output_schemas.get(name)
        if (
            self.mode == "off"
            or name in self.validators
            or tool is None
            or tool.output_schema is UNSET
        ):
            return
        try:
            compiled: CompiledSchema | SchemaError = await compile_server_schema_async(
                tool.output_schema
            )
        except SchemaError as exc:
            compiled = _schema_failed(name, exc)
        except ModuleNotFoundError:
            return  # validate_output reports it (or raises, in strict mode)
        if self.output_schemas.get(name) is tool:  # the listing did not change meanwhile
            self.validators[name] = compiled

    def validate_output(self, name: str, result: t.CallToolResult) -> OutputValidation:
        """Check ``result`` against the tool's ``outputSchema`` (compiled once per tool)."""
        tool = self.output_schemas.get(name)
        if tool is None:
            return _NOT_LISTED
        schema = tool.output_schema
        if schema is UNSET:
            return _NO_SCHEMA
        if result.is_error is True:
            return _IS_ERROR
        if result.structured_content is UNSET:
            return OutputValidation("missing")
        compiled = self.validators.get(name)
        if compiled is None:  # (not prepared: the listing changed meanwhile) bounded, inline
            try:
                compiled = compile_server_schema(schema)
            except SchemaError as exc:
                compiled = _schema_failed(name, exc)
            except ModuleNotFoundError as exc:
                if self.mode == "strict":
                    raise
                return OutputValidation("unchecked", reason=str(exc))
            self.validators[name] = compiled
        if isinstance(compiled, SchemaError):
            return OutputValidation("unchecked", reason=f"outputSchema of {name!r}: {compiled}")
        return compiled.validate(result.structured_content)

    def checked(self, name: str, result: t.CallToolResult) -> t.CallToolResult:
        """Check a tool result against the tool's ``outputSchema``."""
        if self.mode != "off":
            validation = self.validate_output(name, result)
            setattr(result, "_trio_mcp_validation", validation)  # noqa: B010 (no wire field)
            if not validation.ok and self.mode == "strict":
                raise OutputValidationError(
                    f"tool {name!r}: {validation.describe()}", result, validation
                )
        return result


def _schema_failed(name: str, error: SchemaError) -> SchemaError:
    """A tool's ``outputSchema`` that was not compiled: logged once (then cached)."""
    logger.warning("outputSchema of tool %r: %s", name, error)
    return error

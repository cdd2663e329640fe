"""Tools: what a server offers (``tools/list``) and what a call returns (``tools/call``).

The params of ``tools/call`` ([`CallToolRequestParams`][trio_mcp.types.CallToolRequestParams]) live
in `trio_mcp.types._input` with the other requests a 2026-07-28 client may retry with
input responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from .._exceptions import ToolError
from ._apps import UIToolMeta, ui_meta
from ._base import Icon, PaginatedResult, Result, _Wire
from ._content import TextContent, _ContentField

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._validation import OutputValidation


class ToolAnnotations(_Wire, kw_only=True):
    """Untrusted hints describing a tool's behaviour (2025-03-26+)."""

    title: str | UnsetType = UNSET
    read_only_hint: bool | UnsetType = UNSET
    destructive_hint: bool | UnsetType = UNSET
    idempotent_hint: bool | UnsetType = UNSET
    open_world_hint: bool | UnsetType = UNSET


class ToolExecution(_Wire, kw_only=True):
    """Execution properties of a tool: task support (2025-11-25 only)."""

    task_support: str | UnsetType = UNSET  # "forbidden", "optional" or "required" today


# gc=False: the cyclic garbage collector never tracks a Tool (msgspec's option). A listing
# of 1,000 tools allocates about 4,000 tracked objects (per tool: itself, its inputSchema
# and properties dicts, its "required" list); untracking the tools leaves about 3,000 and
# takes a quarter of the collector's work out of every tools/list (issue 35). It is safe
# because nothing can form a reference cycle through a Tool that the library makes: its
# fields are strings, UNSET, acyclic structs and JSON trees freshly decoded from bytes (JSON
# cannot spell a cycle), no subclass adds fields, and nothing here puts a Tool (or anything
# that holds one) into a Tool's own dicts. The dicts and lists inside stay tracked, and
# reference counting frees a Tool as before. Only a caller who stores a tool inside its own
# schema (``tool.meta["self"] = tool``) makes a cycle, which would then never be freed.
class Tool(_Wire, kw_only=True, gc=False):
    """A tool the server offers.

    Attributes:
        name: The name to call it by.
        input_schema: JSON Schema of the arguments, exactly as sent.
        title: Display name (2025-06-18+).
        description: What the tool does.
        output_schema: JSON Schema of ``structured_content``, exactly as sent (2025-06-18+).
        annotations: Behaviour hints (2025-03-26+).
        icons: Icons (2025-11-25+).
        execution: Task support (2025-11-25 only).
        meta: The ``_meta`` object (2025-06-18+).

    Note:
        The garbage collector does not track tools (for speed: a listing of 1,000 tools
        is 1,000 objects fewer to walk), so never store a tool inside its own dicts (for
        example ``tool.meta["self"] = tool``): such a cycle would never be freed.
    """

    name: str
    input_schema: dict[str, Any]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    output_schema: dict[str, Any] | UnsetType = UNSET
    annotations: ToolAnnotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    execution: ToolExecution | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    @property
    def ui(self) -> UIToolMeta | None:
        """The MCP Apps ``_meta.ui`` of this tool: its app's ``ui://`` URI, its audience.

        None when the server sent none, or sent one that is malformed (logged at debug).
        """
        return ui_meta(self.meta, UIToolMeta)


class ListToolsResult(PaginatedResult, kw_only=True):
    """Result of ``tools/list``; cacheable in 2026-07-28."""

    tools: list[Tool]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class CallToolResult(Result, kw_only=True, dict=True):
    """Result of ``tools/call``.

    A tool that failed returns ``is_error=True``: a value, not an exception. Call
    [`raise_for_error()`][trio_mcp.types.CallToolResult.raise_for_error] to turn it into a
    [`ToolError`][trio_mcp.ToolError]. [`validation`][trio_mcp.types.CallToolResult.validation]
    tells whether ``structured_content`` matched the tool's ``outputSchema`` (it is no wire field:
    it is never encoded).

    Attributes:
        content: The unstructured result, as content blocks.
        structured_content: The structured result (an object; any JSON value in 2026-07-28;
            2025-06-18+).
        is_error: Whether the tool call failed.
    """

    content: list[_ContentField]
    structured_content: Any | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET

    @property
    def text(self) -> str:
        """The text of every [`TextContent`][trio_mcp.types.TextContent] block, joined with
        newlines."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def validation(self) -> OutputValidation | None:
        """The [`OutputValidation`][trio_mcp.validation.OutputValidation] outcome set by
        ``call_tool``, or None.

        None for a result not made by [`call_tool()`][trio_mcp.ClientSession.call_tool] (decoded
        by hand, or validation switched off).
        """
        found: OutputValidation | None = getattr(self, "_trio_mcp_validation", None)
        return found

    def raise_for_error(self) -> Self:
        """Raise if the tool reported an error; otherwise return this result.

        Returns:
            This result, so calls can be chained.

        Raises:
            ToolError: ``is_error`` is true. Its message is the tool's text output and its
                ``result`` attribute is this result.
        """
        if self.is_error is True:
            text = self.text
            message = f"tool call failed: {text}" if text else "tool call failed (no text content)"
            raise ToolError(message, self)
        return self

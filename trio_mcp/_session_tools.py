"""The session's tools API: listing and calling tools, and the server tasks a call becomes.

`ToolsAPI` is a mixin of [`ClientSession`][trio_mcp.ClientSession]: the public signatures and
docstrings of the tool methods, each a thin layer over the request path
(`RequestPath`, which declares the session's attributes it uses)
and the tool book (`ToolBook`: headers, output schemas, task support).
The blocking and asyncio bridges are generated from it (``scripts/gen_bridges.py``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any, overload

import trio

from . import types as t
from ._requests import ProgressCallback, RequestPath, T
from ._tasks import TaskState, ToolTask
from ._tools import ListingScan
from ._toolsearch import ToolIndex
from ._validation import decode_structured

__all__ = ["ToolsAPI"]


class ToolsAPI(RequestPath):
    """Tools and tool tasks: the part of [`ClientSession`][trio_mcp.ClientSession] that lists and
    calls the server's tools."""

    __slots__ = ()

    async def list_tools(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Tool]:
        """List every tool the server offers, following every ``nextCursor``.

        Over modern Streamable HTTP a tool whose ``x-mcp-header`` annotations break the
        spec's rules is left out (and logged), as the spec requires.

        Args:
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds for each page request.
        """
        scan = ListingScan() if self._transport.wants_param_headers else None
        tools: list[t.Tool] = await self._all_pages(
            "tools/list", t.ListToolsResult, "tools", cache=cache, timeout=timeout, on_raw=scan
        )
        self._tools.forget_listing()
        self._tools.remember_listed(tools)
        if scan is None:
            return tools
        return self._tools.check_tool_headers(tools, clean=scan.clean)

    async def search_tools(
        self,
        query: str,
        *,
        limit: int | None = None,
        cache: bool = True,
        timeout: float | None = None,
    ) -> list[t.Tool]:
        """Search the server's tools by name, title, description and argument names.

        The first search lists every tool ([`list_tools`][trio_mcp.ClientSession.list_tools])
        and builds a [`ToolIndex`][trio_mcp.agent.ToolIndex] of them (about 5 µs per
        tool); later searches use it until the server says its tools changed (or a new
        listing is made), so a search of 10,000 tools takes milliseconds. The result is a
        list of tools, best match first, ready to hand to a model.

        Args:
            query: The words to look for; an empty query returns every tool.
            limit: At most this many tools (None: every match).
            cache: Reuse the index of the last listing (False: list the tools again).
            timeout: Seconds for each page request of the listing.

        Returns:
            The matching tools, best first.
        """
        index = self._tools.search_index if cache else None
        if index is None:
            tools = await self.list_tools(cache=cache, timeout=timeout)
            index = self._tools.search_index = ToolIndex(tools)
        else:
            await trio.lowlevel.checkpoint()
        return index.search(query, limit=limit)

    async def list_tools_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListToolsResult:
        """Fetch one page of tools.

        Over modern Streamable HTTP a tool whose ``x-mcp-header`` annotations break the
        spec's rules is left out of the page (and logged), as in
        [`list_tools()`][trio_mcp.ClientSession.list_tools]; the tools kept get their
        ``Mcp-Param-*`` headers when called.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before `trio.TooSlowError`.
        """
        scan = ListingScan() if self._transport.wants_param_headers else None
        page: t.ListToolsResult = await self._page(
            "tools/list", t.ListToolsResult, cursor, cache=cache, timeout=timeout, on_raw=scan
        )
        if cursor is None:
            self._tools.forget_listing()
        self._tools.remember_listed(page.tools)
        if scan is None:
            return page
        return self._tools.checked_page(page, more=cursor is not None, clean=scan.clean)

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: None = None,
    ) -> t.CallToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T],
    ) -> T: ...

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T] | None = None,
    ) -> t.CallToolResult | T:
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised: call
        [`CallToolResult.raise_for_error()`][trio_mcp.types.CallToolResult.raise_for_error] to turn
        it into a [`ToolError`][trio_mcp.ToolError].

        ``structured_content`` is checked against the tool's ``outputSchema`` (known from
        the last [`list_tools()`][trio_mcp.ClientSession.list_tools]; compiled once per tool) and
        the outcome put on [`CallToolResult.validation`][trio_mcp.types.CallToolResult.validation];
        with ``output_validation="strict"`` a mismatch raises instead. See ``docs/tool-results.md``.

        Args:
            name: The tool's name.
            arguments: The tool's arguments (JSON-compatible values).
            timeout: Seconds before `trio.TooSlowError` and cancellation.
            on_progress: Called (or awaited) with each progress notification of this call.
            result_type: Decode ``structured_content`` into this type (a msgspec Struct,
                dataclass or TypedDict) and return that instead of the result.

        Returns:
            The [`CallToolResult`][trio_mcp.types.CallToolResult], or the decoded ``result_type``
                value.

        Raises:
            OutputValidationError: Strict mode and the result does not match its
                ``outputSchema`` (or lacks ``structuredContent``); or ``result_type`` is
                given and the structured content is missing or does not fit it. The
                exception's ``result`` is the whole result.
            ToolError: ``result_type`` is given and the tool reported an error.
        """
        args: Mapping[str, Any] = arguments if arguments is not None else {}
        params, headers = self._tool_call(name, args)
        # before sending: a cancellation while compiling never loses an answered call
        await self._tools.prepare_output_schema(name)
        answer = await self._call(
            "tools/call",
            params,
            timeout=timeout,
            on_progress=on_progress,
            name=name,
            headers=headers,
            tp=t.CallToolResult,
        )
        result = self._tools.checked(name, answer)
        if result_type is None:
            return result
        result.raise_for_error()
        return decode_structured(result, result_type)

    @asynccontextmanager
    async def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AsyncGenerator[ToolTask, None]:
        """Call a tool and hold the server task it becomes, to watch and wait yourself.

        [`call_tool()`][trio_mcp.ClientSession.call_tool] already drives tasks transparently; use
        this for the task id, its status changes and your own waiting (see ``docs/tasks.md``). A
        server that answers at once gives a [`ToolTask`][trio_mcp.tasks.ToolTask] whose ``task_id``
        is None and whose [`ToolTask.result()`][trio_mcp.tasks.ToolTask.result] returns that answer.
        Leaving the block before the task ended cancels it on the server (``tasks/cancel``, shielded
        and bounded).

        Args:
            name: The tool's name.
            arguments: The tool's arguments.
            timeout: Seconds for the ``tools/call`` request itself (not the task).
            on_progress: Called (or awaited) with each progress notification of the call.

        Yields:
            The [`ToolTask`][trio_mcp.tasks.ToolTask].

        Raises:
            ProtocolError: The task the server made has an unknown status.
        """
        async with self._tool_task(name, arguments, timeout, on_progress) as task:
            yield task

    async def list_tasks(self, *, timeout: float | None = None) -> list[TaskState]:
        """List the server's tasks (2025-11-25 ``tasks/list``, every page).

        The 2026-07-28 Tasks extension has no listing: keep the ids you started.

        Args:
            timeout: Seconds for each page request.

        Returns:
            A [`TaskState`][trio_mcp.tasks.TaskState] per task.

        Raises:
            ServerError: The server has no ``tasks/list`` (e.g. a modern server).
            ProtocolError: A task has an unknown status.
        """
        return await self._task_states(timeout)

"""The session's API for the server's other features: resources, prompts, completion, logging.

`FeaturesAPI` is a mixin of [`ClientSession`][trio_mcp.ClientSession]: the public signatures and
docstrings of those methods, each a thin layer over the request path
(`RequestPath`, which declares the session's attributes it uses)
and the result cache. The blocking and asyncio bridges are generated from it
(``scripts/gen_bridges.py``). Tools are in `trio_mcp._session_tools`; resource
subscriptions, with the other notifications, in `trio_mcp._session_notifications`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

import msgspec
import trio

from . import types as t
from ._exceptions import MCPError
from ._requests import RequestPath
from ._subscriptions import LOG_LEVELS

logger = logging.getLogger("trio_mcp")

__all__ = ["FeaturesAPI"]


class FeaturesAPI(RequestPath):
    """Resources, resource templates, prompts, completion and the logging level: the part of
    [`ClientSession`][trio_mcp.ClientSession] for the server's features other than tools."""

    __slots__ = ()

    async def list_resources(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Resource]:
        """List every resource, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/list", t.ListResourcesResult, "resources", cache=cache, timeout=timeout
        )

    async def list_resources_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListResourcesResult:
        """Fetch one page of resources.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before `trio.TooSlowError`.
        """
        return await self._page(
            "resources/list", t.ListResourcesResult, cursor, cache=cache, timeout=timeout
        )

    async def list_resource_templates(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.ResourceTemplate]:
        """List every resource template, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/templates/list", t.ListResourceTemplatesResult, "resource_templates",
            cache=cache, timeout=timeout,
        )  # fmt: skip

    async def list_resource_templates_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListResourceTemplatesResult:
        """Fetch one page of resource templates.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before `trio.TooSlowError`.
        """
        return await self._page(
            "resources/templates/list",
            t.ListResourceTemplatesResult,
            cursor,
            cache=cache,
            timeout=timeout,
        )

    async def read_resource(
        self, uri: str, *, cache: bool = True, timeout: float | None = None
    ) -> t.ReadResourceResult:
        """Read a resource.

        Args:
            uri: The resource's URI.
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before `trio.TooSlowError`.

        Raises:
            ResourceNotFoundError: The server has no such resource.
        """
        if cache and self._cache.entries:
            hit = self._cache.get("resources/read", uri)
            if hit is not None:
                return cast(t.ReadResourceResult, hit)
        raw = await self._call(
            "resources/read", {"uri": uri}, timeout=timeout, name=uri, idempotent=True
        )
        result = self._decode(raw, t.ReadResourceResult, "resources/read")
        if self._era == "modern":
            self._cache.put("resources/read", uri, result)
        return result

    async def list_prompts(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Prompt]:
        """List every prompt, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "prompts/list", t.ListPromptsResult, "prompts", cache=cache, timeout=timeout
        )

    async def list_prompts_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListPromptsResult:
        """Fetch one page of prompts.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before `trio.TooSlowError`.
        """
        return await self._page(
            "prompts/list", t.ListPromptsResult, cursor, cache=cache, timeout=timeout
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> t.GetPromptResult:
        """Get a prompt, filled in with ``arguments``.

        Args:
            name: The prompt's name.
            arguments: Values for the prompt's arguments.
            timeout: Seconds before `trio.TooSlowError`.
        """
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        raw = await self._call("prompts/get", params, timeout=timeout, name=name)
        return self._decode(raw, t.GetPromptResult, "prompts/get")

    async def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference | Mapping[str, Any],
        argument_name: str,
        argument_value: str,
        *,
        context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> t.CompleteResult:
        """Ask the server to complete an argument of a prompt or resource template.

        Args:
            ref: ``PromptReference(name=...)``, ``ResourceTemplateReference(uri=...)`` or the
                same as a dict (``{"type": "ref/prompt", "name": ...}``).
            argument_name: The argument being completed.
            argument_value: What the user typed so far.
            context_arguments: Values of other, already chosen arguments.
        """
        params: dict[str, Any] = {
            "ref": t.to_builtins(ref) if isinstance(ref, msgspec.Struct) else dict(ref),
            "argument": {"name": argument_name, "value": argument_value},
        }
        if context_arguments:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self._call("completion/complete", params, timeout=timeout)
        return self._decode(raw, t.CompleteResult, "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Set the minimum level of log messages the server sends.

        Legacy servers get ``logging/setLevel``; in the modern era the level rides in every
        request's ``_meta`` from now on (nothing is sent now).
        A new legacy session (after the server lost this one) gets the level again.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {sorted(LOG_LEVELS)}")
        self._rpc.check_usable()
        self._log_level = level
        if self._era == "modern":
            self._rebuild_meta()
            await trio.lowlevel.checkpoint()
            return
        await self._call("logging/setLevel", {"level": level})

    async def _roots_changed(self) -> None:
        """Tell a legacy server that the [`Roots`][trio_mcp.handlers.Roots] set changed (bounded,
        never raises)."""
        if self._era != "legacy" or self._protocol_version is None or not self._rpc.usable:
            return
        with trio.move_on_after(self._opts.cancel_notice_timeout) as scope:
            try:
                await self._rpc.notify("notifications/roots/list_changed")
            except (MCPError, trio.ClosedResourceError) as exc:
                logger.debug("could not send notifications/roots/list_changed: %r", exc)
        if scope.cancelled_caught:
            logger.warning("notifications/roots/list_changed could not be sent in time")

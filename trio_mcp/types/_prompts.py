"""Prompts: what a server offers (``prompts/list``) and what ``prompts/get`` returns.

The params of ``prompts/get`` ([`GetPromptRequestParams`][trio_mcp.types.GetPromptRequestParams])
live in `trio_mcp.types._input` with the other requests a 2026-07-28 client may retry with
input responses.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ._base import Icon, PaginatedResult, Result, _Wire
from ._content import _ContentField


class PromptArgument(_Wire, kw_only=True):
    """An argument a prompt accepts; ``title`` is 2025-06-18+."""

    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    required: bool | UnsetType = UNSET


class Prompt(_Wire, kw_only=True):
    """A prompt or prompt template the server offers."""

    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    arguments: list[PromptArgument] | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class PromptMessage(_Wire, kw_only=True):
    """One message of a prompt."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField


class ListPromptsResult(PaginatedResult, kw_only=True):
    """Result of ``prompts/list``; cacheable in 2026-07-28."""

    prompts: list[Prompt]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class GetPromptResult(Result, kw_only=True):
    """Result of ``prompts/get``."""

    messages: list[PromptMessage]
    description: str | UnsetType = UNSET

"""Argument completion (``completion/complete``) for prompts and resource templates."""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

from msgspec import UNSET, UnsetType

from ._base import RequestParams, Result, _Wire


class PromptReference(_Wire, kw_only=True, tag_field="type", tag="ref/prompt"):
    """Identifies a prompt to complete arguments for (``"type": "ref/prompt"``)."""

    type: ClassVar[Literal["ref/prompt"]] = "ref/prompt"
    name: str
    title: str | UnsetType = UNSET


class ResourceTemplateReference(_Wire, kw_only=True, tag_field="type", tag="ref/resource"):
    """Identifies a resource template to complete (``"type": "ref/resource"``)."""

    type: ClassVar[Literal["ref/resource"]] = "ref/resource"
    uri: str


ResourceReference: TypeAlias = ResourceTemplateReference
"""The 2024-11-05/2025-03-26 name of
[`ResourceTemplateReference`][trio_mcp.types.ResourceTemplateReference]."""


class CompletionArgument(_Wire, kw_only=True):
    """The argument being completed and its partial value."""

    name: str
    value: str


class CompletionContext(_Wire, kw_only=True):
    """Already-resolved arguments that give a completion context (2025-06-18+)."""

    arguments: dict[str, str] | UnsetType = UNSET


class CompleteRequestParams(RequestParams, kw_only=True):
    """Params of ``completion/complete``."""

    ref: PromptReference | ResourceTemplateReference
    argument: CompletionArgument
    context: CompletionContext | UnsetType = UNSET


class Completion(_Wire, kw_only=True):
    """Completion values for an argument."""

    values: list[str]
    total: int | UnsetType = UNSET
    has_more: bool | UnsetType = UNSET


class CompleteResult(Result, kw_only=True):
    """Result of ``completion/complete``."""

    completion: Completion

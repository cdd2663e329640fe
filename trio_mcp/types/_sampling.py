"""Sampling: a server asks the client's LLM for a message (``sampling/createMessage``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from ._base import RequestParams, Result, _Wire
from ._content import _ContentField
from ._tasks import TaskMetadata
from ._tools import Tool

IncludeContext = Literal["none", "thisServer", "allServers"]
"""Which MCP context a sampling request wants included."""


class ModelHint(_Wire, kw_only=True):
    """A hint for model selection, e.g. a name substring such as ``"claude-3-5-sonnet"``."""

    name: str | UnsetType = UNSET


class ModelPreferences(_Wire, kw_only=True):
    """The server's model preferences for sampling; priorities range from 0 to 1."""

    hints: list[ModelHint] | UnsetType = UNSET
    cost_priority: float | UnsetType = UNSET
    speed_priority: float | UnsetType = UNSET
    intelligence_priority: float | UnsetType = UNSET


class ToolChoice(_Wire, kw_only=True):
    """How the model may use tools during sampling (2025-11-25+)."""

    mode: str | UnsetType = UNSET  # "auto", "required" or "none" today


class SamplingMessage(_Wire, kw_only=True):
    """A message in a sampling request; content lists are 2025-11-25+."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField | list[_ContentField]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CreateMessageRequestParams(RequestParams, kw_only=True):
    """Params of ``sampling/createMessage``, sent by the server.

    ``tools`` and ``tool_choice`` are 2025-11-25+, ``task`` 2025-11-25 only.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | UnsetType = UNSET
    system_prompt: str | UnsetType = UNSET
    include_context: str | UnsetType = UNSET  # IncludeContext; newer values must decode
    temperature: float | UnsetType = UNSET
    stop_sequences: list[str] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


class CreateMessageResult(Result, kw_only=True):
    """The client's answer to ``sampling/createMessage``; content lists are 2025-11-25+."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField | list[_ContentField]
    model: str
    stop_reason: str | UnsetType = UNSET


class CreateMessageRequest(_Wire, kw_only=True, tag_field="method", tag="sampling/createMessage"):
    """A sampling input request inside an
    [`InputRequiredResult`][trio_mcp.types.InputRequiredResult] (2026-07-28)."""

    method: ClassVar[Literal["sampling/createMessage"]] = "sampling/createMessage"
    params: CreateMessageRequestParams

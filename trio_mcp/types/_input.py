"""Multi round-trip input (2026-07-28): what a server asks for, and the retried requests.

A server that needs sampling, roots or elicitation before it can answer returns an
[`InputRequiredResult`][trio_mcp.types.InputRequiredResult] holding
[`InputRequests`][trio_mcp.types.InputRequests] (each one the input-request form defined with its
feature: ``CreateMessageRequest``, ``ListRootsRequest``, ``ElicitRequest``); the client fulfils them
and retries the original request with [`InputResponses`][trio_mcp.types.InputResponses]. The three
requests that may be retried so (``tools/call``, ``resources/read``, ``prompts/get``) have their
params here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ._base import RequestParams, Result
from ._elicitation import ElicitRequest, ElicitResult
from ._roots import ListRootsRequest, ListRootsResult
from ._sampling import CreateMessageRequest, CreateMessageResult
from ._tasks import TaskMetadata
from ._tolerant import _convert

InputRequest: TypeAlias = CreateMessageRequest | ListRootsRequest | ElicitRequest
"""A request the server needs the client to fulfil before retrying (tagged by ``method``)."""

InputRequests: TypeAlias = dict[str, InputRequest]
"""Input requests keyed by server-assigned ids."""

InputResponse: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult
"""The client's answer to one [`InputRequest`][trio_mcp.types.InputRequest]."""

InputResponses: TypeAlias = dict[str, InputResponse]
"""Input responses keyed by the ids of the [`InputRequests`][trio_mcp.types.InputRequests] they
answer."""


# What msgspec decodes input responses with at runtime (plain dicts, turned into result
# structs by ``_input_responses``) versus what type checkers see.


if TYPE_CHECKING:
    _InputResponsesField: TypeAlias = InputResponses
else:
    _InputResponsesField = dict[str, dict[str, Any]]


def _input_response(value: Any) -> Any:
    """Turn one decoded input response into the result struct its keys call for."""
    if isinstance(value, (CreateMessageResult, ListRootsResult, ElicitResult)):
        return value
    if isinstance(value, dict):
        if "action" in value:
            return _convert(value, ElicitResult)
        if "roots" in value:
            return _convert(value, ListRootsResult)
        if "model" in value or "role" in value:
            return _convert(value, CreateMessageResult)
    raise msgspec.ValidationError(
        "input response is none of CreateMessageResult, ListRootsResult, ElicitResult"
    )


def _input_responses(value: Any) -> Any:
    if value is UNSET:
        return value
    return {key: _input_response(item) for key, item in value.items()}


class InputRequiredResult(Result, kw_only=True):
    """The server needs input from the client before it can answer (2026-07-28).

    Fulfil every entry of ``input_requests`` and retry the original request with
    ``input_responses`` and this ``request_state``.
    """

    input_requests: InputRequests | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class InputResponseRequestParams(RequestParams, kw_only=True):
    """Params of a retried request carrying input responses (2026-07-28)."""

    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


# ---------------------------------------------------------------------------------------
# The requests a 2026-07-28 client may retry with input responses
# ---------------------------------------------------------------------------------------


class CallToolRequestParams(RequestParams, kw_only=True):
    """Params of ``tools/call``.

    ``task`` is 2025-11-25 only; ``input_responses`` and ``request_state`` are 2026-07-28,
    sent when retrying after an [`InputRequiredResult`][trio_mcp.types.InputRequiredResult].
    """

    name: str
    arguments: dict[str, Any] | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


class ReadResourceRequestParams(RequestParams, kw_only=True):
    """Params of ``resources/read``; ``input_responses``/``request_state`` are 2026-07-28."""

    uri: str
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


class GetPromptRequestParams(RequestParams, kw_only=True):
    """Params of ``prompts/get``; ``input_responses``/``request_state`` are 2026-07-28."""

    name: str
    arguments: dict[str, str] | UnsetType = UNSET
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)

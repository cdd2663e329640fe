"""The agentic tool loop: a model, MCP tools from one or more sessions, and a conversation.

[`run_agent()`][trio_mcp.agent.run_agent] offers the tools of every session (or
[`ServerGroup`][trio_mcp.groups.ServerGroup]) to a model (with collision-free names),
runs every tool call the model asks for concurrently, feeds the results back and repeats
until the model stops asking, the iteration cap is reached or the deadline passes. The
conversation is MCP's own sampling format ([`SamplingMessage`][trio_mcp.types.SamplingMessage] with
[`ToolUseContent`][trio_mcp.types.ToolUseContent] and
[`ToolResultContent`][trio_mcp.types.ToolResultContent] blocks), so the same model callable serves
[`sampling_handler()`][trio_mcp.agent.sampling_handler] for servers whose ``sampling/createMessage``
carries ``tools``.

A model is any async callable taking a [`ModelRequest`][trio_mcp.agent.ModelRequest] and returning a
[`CreateMessageResult`][trio_mcp.types.CreateMessageResult];
[`OpenAIChatModel`][trio_mcp.agent.OpenAIChatModel] and
[`AnthropicModel`][trio_mcp.agent.AnthropicModel] are adapters for the two common HTTP APIs (httpx,
imported on first use).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

import msgspec
import trio
from msgspec import UNSET

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

from . import types as t
from ._exceptions import AgentDeadlineError, AgentIterationLimitError, MCPError, ModelError
from ._exceptions import raise_bare as _raise_bare
from ._redact import display_url
from ._toolsearch import ToolIndex

if TYPE_CHECKING:
    import httpx

    from ._group import ServerGroup
    from ._session import ClientSession, RequestContext

    _Source: TypeAlias = ClientSession | ServerGroup

__all__ = [
    "AgentResult",
    "AnthropicModel",
    "Model",
    "ModelRequest",
    "OpenAIChatModel",
    "run_agent",
    "sampling_handler",
]

logger = logging.getLogger("trio_mcp")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What a model is asked: the conversation and the tools it may use.

    Attributes:
        messages: The conversation so far.
        tools: The tools offered (names as the model must use them).
        system_prompt: The system prompt, if any.
        max_tokens: The most tokens the model may produce.
        tool_choice: ``"auto"``, ``"required"`` or ``"none"``; None: the model's default.
        temperature: Sampling temperature, if set.
        stop_sequences: Sequences that end generation.
    """

    messages: Sequence[t.SamplingMessage]
    tools: Sequence[t.Tool] = ()
    system_prompt: str | None = None
    max_tokens: int = 1024
    tool_choice: str | None = None
    temperature: float | None = None
    stop_sequences: Sequence[str] = ()


Model = Callable[[ModelRequest], Awaitable[t.CreateMessageResult]]
"""A model: awaited with a [`ModelRequest`][trio_mcp.agent.ModelRequest], returns the assistant's
[`CreateMessageResult`][trio_mcp.types.CreateMessageResult] (with
[`ToolUseContent`][trio_mcp.types.ToolUseContent] blocks to call tools)."""


@dataclass(frozen=True, slots=True)
class AgentResult:
    """How [`run_agent()`][trio_mcp.agent.run_agent] ended: the model answered without asking for
    tools.

    Attributes:
        messages: The whole conversation, the given messages first, the final answer last.
        final: The model's final answer.
        iterations: How many times the model was called.
        tool_calls: How many tool calls were run.
    """

    messages: list[t.SamplingMessage]
    final: t.CreateMessageResult
    iterations: int
    tool_calls: int

    @property
    def text(self) -> str:
        """The text of the final answer."""
        return _text_of(self.final.content)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(cast("list[Any]", content))  # type: ignore[redundant-cast]
    return [content]


def _text_of(content: Any) -> str:
    return "\n".join(b.text for b in _blocks(content) if isinstance(b, t.TextContent))


_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9-]")
_MAX_LABEL: Final = 24
"""The longest label, so ``<label>__`` always leaves room for the tool's own name."""


def _qualified(label: str, name: str) -> str:
    """``<label>__<name>``; a name that is unsafe or too long gets a digest of itself.

    Labels have no ``_`` (see `_clean_labels()`), so the text before the first ``__``
    is always the label: no server can offer a name that stands for another's tool.
    """
    qualified = f"{label}__{name}"
    if _VALID_NAME.fullmatch(qualified):
        return qualified
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    room = 64 - len(label) - 2 - len(digest) - 1
    return f"{label}__{_NAME_UNSAFE.sub('_', name)[:room]}_{digest}"


def _clean_labels(labelled: Mapping[str, _Source]) -> dict[str, _Source]:
    """Labels of only ``[A-Za-z0-9-]`` (``_`` and the rest become ``-``), short and unique."""
    cleaned: dict[str, _Source] = {}
    for index, (label, source) in enumerate(labelled.items()):
        clean = _LABEL_UNSAFE.sub("-", label)[:_MAX_LABEL] or f"s{index}"
        n = 1
        while clean in cleaned:
            n += 1
            suffix = f"-{index}" if n == 2 else f"-{index}-{n}"
            clean = _LABEL_UNSAFE.sub("-", label)[: _MAX_LABEL - len(suffix)] + suffix
        cleaned[clean] = source
    return cleaned


@dataclass(slots=True)
class _Offered:
    session: _Source
    tool: t.Tool


@dataclass(slots=True)
class _Toolbox:
    """Tools of many sessions under collision-free names (``^[A-Za-z0-9_-]{1,64}$``)."""

    offered: dict[str, _Offered] = field(default_factory=dict[str, _Offered])

    @classmethod
    async def gather(cls, sessions: Mapping[str, _Source]) -> _Toolbox:
        """List every source's tools (a group's under its own collision-free names)."""
        listed: dict[str, list[t.Tool]] = {}

        async def one(label: str, session: _Source) -> None:
            listed[label] = await session.list_tools()

        try:
            async with trio.open_nursery() as nursery:
                for label, session in sessions.items():
                    nursery.start_soon(one, label, session)
        except BaseExceptionGroup as failed:  # the caller sees the (first) error itself
            _cancelled, rest = failed.split(trio.Cancelled)
            if rest is None:
                raise
            first: BaseException = rest
            while isinstance(first, BaseExceptionGroup):
                first = cast("BaseExceptionGroup[BaseException]", first).exceptions[0]  # pyright: ignore[reportUnnecessaryCast]
            _raise_bare(first)
        counts: dict[str, int] = {}
        for tools in listed.values():
            for tool in tools:
                counts[tool.name] = counts.get(tool.name, 0) + 1
        prefixes = tuple(f"{label}__" for label in sessions)
        box = cls()
        for label, session in sessions.items():
            for tool in listed[label]:
                if (
                    counts[tool.name] == 1
                    and _VALID_NAME.fullmatch(tool.name)
                    and not tool.name.startswith(prefixes)
                ):
                    name = tool.name  # offered as is: it can stand for no other tool
                else:
                    name = _qualified(label, tool.name)
                unique, n = name, 1
                while unique in box.offered:  # the same server offers a name twice
                    n += 1
                    suffix = f"_{n}"
                    unique = name[: 64 - len(suffix)] + suffix
                box.offered[unique] = _Offered(session, tool)
        return box

    def tools(self) -> list[t.Tool]:
        return [msgspec.structs.replace(o.tool, name=name) for name, o in self.offered.items()]


def _error_result(use: t.ToolUseContent, message: str) -> t.ToolResultContent:
    return t.ToolResultContent(
        tool_use_id=use.id, content=[t.TextContent(text=message)], is_error=True
    )


async def _run_tool(
    box: _Toolbox, use: t.ToolUseContent, timeout: float | None
) -> t.ToolResultContent:
    offered = box.offered.get(use.name)
    if offered is None:
        return _error_result(use, f"there is no tool named {use.name!r}")
    try:
        result = await offered.session.call_tool(offered.tool.name, use.input, timeout=timeout)
    except (MCPError, trio.TooSlowError, trio.ClosedResourceError) as exc:
        return _error_result(use, f"the tool call failed: {exc}")
    return t.ToolResultContent(
        tool_use_id=use.id,
        content=result.content,
        structured_content=result.structured_content,
        is_error=result.is_error,
    )


async def run_agent(
    model: Model,
    sessions: (
        ClientSession
        | ServerGroup
        | Sequence[ClientSession | ServerGroup]
        | Mapping[str, ClientSession | ServerGroup]
    ),
    messages: Sequence[t.SamplingMessage | str],
    *,
    system_prompt: str | None = None,
    max_iterations: int = 10,
    timeout: float | None = None,
    tool_timeout: float | None = None,
    max_tokens: int = 1024,
    tool_choice: str | None = None,
    max_tools: int | None = None,
) -> AgentResult:
    """Run the agentic tool loop until the model answers without asking for tools.

    Each iteration calls the model with the conversation and every tool of every session;
    every tool call it asks for runs concurrently (a nursery of this call), and the results
    go back as one user message of [`ToolResultContent`][trio_mcp.types.ToolResultContent] blocks. A
    failed call, a tool nobody has, or a tool's ``isError`` result is fed back as an ``is_error``
    result, so the model can recover; it is no exception here.

    Args:
        model: The model (see `Model`).
        sessions: One session, several, or a mapping from labels to sessions. Tool names
            that collide across sessions are offered as ``<label>__<name>`` (labels default
            to the servers' names, else ``s0``, ``s1``...; in names, each label's
            characters other than ``A-Za-z0-9-`` become ``-``). A name is offered as is only
            when no other session has it and it does not start with a ``<label>__``, so a
            server can never offer a name that stands for another server's tool; a name
            that is unsafe or too long becomes ``<label>__<name>_<digest>``. A
            [`ServerGroup`][trio_mcp.groups.ServerGroup] may stand in for a session: its tools are
            offered under the group's exposed names (its collision policy), each call is routed by
            the group, and the tool list is read again before every model call, so a
            restarted server's refreshed catalogue is seen; a call to a server that is
            down is an error result.
        messages: The conversation so far (a string is one user text message).
        system_prompt: The system prompt.
        max_iterations: The most model calls.
        timeout: Seconds for the whole loop: a cancel scope that also cancels tool calls
            in flight (the servers get ``notifications/cancelled``).
        tool_timeout: Seconds for each tool call (a timeout becomes an error result).
        max_tokens: Passed to the model.
        tool_choice: ``"auto"``, ``"required"`` or ``"none"`` (None: the model's default).
        max_tools: Offer the model at most this many tools: those that best match the
            conversation's user text (a [`ToolIndex`][trio_mcp.agent.ToolIndex] search of
            every tool, built once per tool listing). None: every tool.

    Returns:
        The [`AgentResult`][trio_mcp.agent.AgentResult].

    Raises:
        AgentIterationLimitError: The model still asked for tools after ``max_iterations``
            calls; ``transcript`` holds the conversation so far.
        AgentDeadlineError: ``timeout`` passed (a `trio.TooSlowError` too), with the
            transcript so far.
        ModelError: The model (adapter) failed.
        NameCollisionError: A group under ``collisions="error"`` has a clashing tool name.
        ValueError: ``max_iterations``, ``timeout`` or ``max_tools`` is not positive, or
            no session given.
    """
    if max_iterations < 1 or (timeout is not None and not timeout > 0):
        raise ValueError("run_agent(): max_iterations and timeout must be positive")
    if max_tools is not None and max_tools < 1:
        raise ValueError("run_agent(): max_tools must be positive")
    labelled = _label(sessions)
    transcript: list[t.SamplingMessage] = [
        t.SamplingMessage(role="user", content=t.TextContent(text=m)) if isinstance(m, str) else m
        for m in messages
    ]
    calls = 0
    with trio.CancelScope(
        deadline=trio.current_time() + timeout if timeout else float("inf")
    ) as scope:
        box = await _Toolbox.gather(labelled)
        tools = _offered(box.tools(), transcript, max_tools)
        live = _has_group(labelled)
        for iteration in range(1, max_iterations + 1):
            if live and iteration > 1:  # a group's servers come and go: offer what is there
                box = await _Toolbox.gather(labelled)
                tools = _offered(box.tools(), transcript, max_tools)
            request = ModelRequest(
                messages=tuple(transcript), tools=tools, system_prompt=system_prompt,
                max_tokens=max_tokens, tool_choice=tool_choice,
            )  # fmt: skip
            answer = await model(request)
            transcript.append(t.SamplingMessage(role="assistant", content=answer.content))
            uses = [b for b in _blocks(answer.content) if isinstance(b, t.ToolUseContent)]
            if not uses:
                return AgentResult(transcript, answer, iteration, calls)
            if iteration == max_iterations:
                break
            results: list[t.ToolResultContent | None] = [None] * len(uses)
            async with trio.open_nursery() as nursery:
                for index, use in enumerate(uses):
                    nursery.start_soon(_run_into, results, index, box, use, tool_timeout)
            calls += len(uses)
            done = [r for r in results if r is not None]
            transcript.append(t.SamplingMessage(role="user", content=cast("list[Any]", done)))
    if scope.cancelled_caught:
        raise AgentDeadlineError(
            f"the agent loop did not finish within {timeout} s", list(transcript)
        )
    raise AgentIterationLimitError(
        f"the model still asked for tools after {max_iterations} iterations "
        "(raise max_iterations to allow more)",
        list(transcript),
    )


def _offered(
    tools: list[t.Tool], transcript: Sequence[t.SamplingMessage], limit: int | None
) -> list[t.Tool]:
    """The tools to offer: all, or the ``limit`` best matches of the user's words."""
    if limit is None or len(tools) <= limit:
        return tools
    words = [
        block.text
        for message in transcript
        if message.role == "user"
        for block in _blocks(message.content)
        if isinstance(block, t.TextContent)
    ]
    return ToolIndex(tools).search(" ".join(words), limit=limit)


async def _run_into(
    results: list[t.ToolResultContent | None],
    index: int,
    box: _Toolbox,
    use: t.ToolUseContent,
    timeout: float | None,
) -> None:
    results[index] = await _run_tool(box, use, timeout)


def _has_group(labelled: Mapping[str, _Source]) -> bool:
    from ._group import ServerGroup

    return any(isinstance(source, ServerGroup) for source in labelled.values())


def _label(
    sessions: ClientSession | ServerGroup | Sequence[_Source] | Mapping[str, _Source],
) -> dict[str, _Source]:
    from ._group import ServerGroup

    labelled: dict[str, _Source]
    if isinstance(sessions, Mapping):
        labelled = dict(sessions)
    else:
        listed = [sessions] if not isinstance(sessions, Sequence) else list(sessions)
        labelled = {}
        for index, session in enumerate(listed):
            if isinstance(session, ServerGroup):
                label = f"group{index}" if len(listed) > 1 else "group"
            else:
                info = session.server_info
                label = info.name if info is not None else f"s{index}"
            if label in labelled:
                label = f"{label}{index}"
            labelled[label] = session
    if not labelled:
        raise ValueError("run_agent(): give at least one session")
    return _clean_labels(labelled)


class _SamplingHandler:
    """A sampling handler that asks ``model`` (declares ``sampling.tools``)."""

    supports_tools = True

    def __init__(self, model: Model, model_name: str | None) -> None:
        self._model = model
        self._model_name = model_name

    async def __call__(
        self, params: t.CreateMessageRequestParams, ctx: RequestContext
    ) -> t.CreateMessageResult:
        choice = params.tool_choice
        request = ModelRequest(
            messages=params.messages,
            tools=params.tools if params.tools is not UNSET else (),
            system_prompt=params.system_prompt if params.system_prompt is not UNSET else None,
            max_tokens=params.max_tokens,
            tool_choice=(choice.mode if choice is not UNSET and choice.mode is not UNSET else None),
            temperature=params.temperature if params.temperature is not UNSET else None,
            stop_sequences=params.stop_sequences if params.stop_sequences is not UNSET else (),
        )
        answer = await self._model(request)
        if self._model_name is not None and not answer.model:
            answer = msgspec.structs.replace(answer, model=self._model_name)
        if not request.tools:
            answer = _one_block(answer)
        return answer


def _one_block(answer: t.CreateMessageResult) -> t.CreateMessageResult:
    """The answer to a sampling request without tools: one content block, as the schema says.

    A list of one block becomes that block; several text blocks become one (joined with
    newlines). Anything else cannot be said in one block.

    Raises:
        ModelError: The model answered several blocks that are not all text.
    """
    blocks = _blocks(answer.content)
    if not isinstance(answer.content, list):
        return answer
    if len(blocks) == 1:
        return msgspec.structs.replace(answer, content=blocks[0])
    if blocks and all(isinstance(block, t.TextContent) for block in blocks):
        return msgspec.structs.replace(answer, content=t.TextContent(text=_text_of(blocks)))
    kinds = ", ".join(type(block).__name__ for block in blocks) or "no blocks"
    raise ModelError(
        f"the model answered {kinds} to a sampling request without tools, which takes "
        "exactly one content block"
    )


def sampling_handler(
    model: Model, *, model_name: str | None = None
) -> Callable[[t.CreateMessageRequestParams, RequestContext], Awaitable[t.CreateMessageResult]]:
    """A ``sampling=`` handler that answers ``sampling/createMessage`` with ``model``.

    The client then declares ``sampling.tools``: the server may offer tools; the model's
    [`ToolUseContent`][trio_mcp.types.ToolUseContent] blocks go back to the server, which runs them
    and asks again.

    Args:
        model: The model (see `Model`).
        model_name: Reported as ``model`` when the model leaves it empty.

    Returns:
        The handler, for ``open_mcp_session(sampling=...)``.
    """
    return _SamplingHandler(model, model_name)


# -- HTTP model adapters -------------------------------------------------------------------


class _HTTPModel:
    """Base of the HTTP model adapters: one JSON POST per call, errors as ModelError."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        client: httpx.AsyncClient | None,
        timeout: float,
    ) -> None:
        self.model: str = model
        self.base_url: str = base_url.rstrip("/")
        self._api_key = api_key
        self._client = client
        self._timeout = timeout

    def _headers(self) -> dict[str, str]:  # pragma: no cover - overridden
        return {}

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        import httpx

        url = self.base_url + path
        try:
            if self._client is not None:
                response = await self._client.post(url, json=body, headers=self._headers())
            else:
                async with httpx.AsyncClient(timeout=self._timeout) as client:
                    response = await client.post(url, json=body, headers=self._headers())
        except httpx.HTTPError as exc:
            raise ModelError(
                f"the model API at {display_url(url)} could not be reached: {exc}"
            ) from exc
        if response.status_code >= 400:
            raise ModelError(
                f"the model API answered HTTP {response.status_code}: {response.text[:500]}",
                status_code=response.status_code,
                body=response.text[:65536],
            )
        try:
            return msgspec.json.decode(response.content)
        except msgspec.DecodeError as exc:
            raise ModelError(
                f"the model API sent malformed JSON: {exc}", body=response.text[:65536]
            ) from exc


def _parse_json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value: object = msgspec.json.decode(text) if text else {}
    except msgspec.DecodeError as exc:
        raise ModelError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ModelError(f"{what} is not a JSON object")
    return cast("dict[str, Any]", value)


def _tool_result_text(block: t.ToolResultContent) -> str:
    text = _text_of(block.content)
    if not text and block.structured_content is not UNSET:
        text = msgspec.json.encode(block.structured_content).decode()
    return text


class OpenAIChatModel(_HTTPModel):
    """A `Model` speaking the OpenAI-compatible chat completions API.

    Many local model servers (llama.cpp, vLLM, Ollama, LM Studio) speak it too. Text,
    tool-use and tool-result content is translated; other content raises ``ValueError``.

    Args:
        model: The model name sent with each request.
        base_url: The API root (``POST {base_url}/chat/completions``).
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        client: Your ``httpx.AsyncClient`` (not closed here); default: one per request.
        timeout: Network timeout in seconds when no client is given.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, client=client, timeout=timeout)

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def __call__(self, request: ModelRequest) -> t.CreateMessageResult:
        """Ask the model.

        Args:
            request: The conversation and tools.

        Returns:
            The assistant's answer.

        Raises:
            ModelError: HTTP failure, an error status, or a malformed answer.
            ValueError: The conversation holds content this API cannot take.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _openai_messages(request),
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description if tool.description is not UNSET else "",
                    "parameters": tool.input_schema,
                }} for tool in request.tools
            ]  # fmt: skip
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        answer = await self._post("/chat/completions", body)
        try:
            choice = answer["choices"][0]
            message = choice["message"]
            content: list[Any] = []
            if message.get("content"):
                content.append(t.TextContent(text=str(message["content"])))
            for call in message.get("tool_calls") or ():
                function = call["function"]
                content.append(t.ToolUseContent(
                    id=str(call["id"]), name=str(function["name"]),
                    input=_parse_json_object(function.get("arguments") or "", "tool arguments"),
                ))  # fmt: skip
            reason = {"stop": "endTurn", "tool_calls": "toolUse", "length": "maxTokens"}.get(
                str(choice.get("finish_reason")), str(choice.get("finish_reason"))
            )
            return t.CreateMessageResult(
                role="assistant", content=content or [t.TextContent(text="")],
                model=str(answer.get("model", self.model)), stop_reason=reason,
            )  # fmt: skip
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(f"malformed chat completions answer: {exc!r}") from exc


def _openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
    for message in request.messages:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in _blocks(message.content):
            if isinstance(block, t.TextContent):
                texts.append(block.text)
            elif isinstance(block, t.ToolUseContent):
                arguments = msgspec.json.encode(block.input).decode()
                function = {"name": block.name, "arguments": arguments}
                calls.append({"id": block.id, "type": "function", "function": function})
            elif isinstance(block, t.ToolResultContent):
                out.append({"role": "tool", "tool_call_id": block.tool_use_id,
                            "content": _tool_result_text(block)})  # fmt: skip
            else:
                raise ValueError(f"OpenAIChatModel cannot send {type(block).__name__} content")
        if calls:
            out.append({"role": "assistant", "content": "\n".join(texts) or None,
                        "tool_calls": calls})  # fmt: skip
        elif texts:
            out.append({"role": message.role, "content": "\n".join(texts)})
    return out


class AnthropicModel(_HTTPModel):
    """A `Model` speaking the Anthropic Messages API.

    Args:
        model: The model name sent with each request.
        base_url: The API root (``POST {base_url}/v1/messages``).
        api_key: Sent as ``x-api-key`` when given.
        client: Your ``httpx.AsyncClient`` (not closed here); default: one per request.
        timeout: Network timeout in seconds when no client is given.
        version: The ``anthropic-version`` header.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
        version: str = "2023-06-01",
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, client=client, timeout=timeout)
        self.version: str = version

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    async def __call__(self, request: ModelRequest) -> t.CreateMessageResult:
        """Ask the model.

        Args:
            request: The conversation and tools.

        Returns:
            The assistant's answer.

        Raises:
            ModelError: HTTP failure, an error status, or a malformed answer.
            ValueError: The conversation holds content this API cannot take.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [
                {"role": m.role, "content": [_anthropic_block(b) for b in _blocks(m.content)]}
                for m in request.messages
            ],
        }
        if request.system_prompt:
            body["system"] = request.system_prompt
        if request.tools:
            body["tools"] = [
                {"name": tool.name, "input_schema": tool.input_schema,
                 "description": tool.description if tool.description is not UNSET else ""}
                for tool in request.tools
            ]  # fmt: skip
            if request.tool_choice is not None:
                kind = {"required": "any"}.get(request.tool_choice, request.tool_choice)
                body["tool_choice"] = {"type": kind}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop_sequences"] = list(request.stop_sequences)
        answer = await self._post("/v1/messages", body)
        try:
            content: list[Any] = []
            for block in answer["content"]:
                if block["type"] == "text":
                    content.append(t.TextContent(text=str(block["text"])))
                elif block["type"] == "tool_use":
                    if not isinstance(block["input"], dict):
                        raise TypeError("tool_use input is not an object")
                    use = t.ToolUseContent(
                        id=str(block["id"]), name=str(block["name"]), input=block["input"]
                    )
                    content.append(use)
            stop = str(answer.get("stop_reason"))
            reason = _ANTHROPIC_STOP.get(stop, stop)
            return t.CreateMessageResult(
                role="assistant", content=content or [t.TextContent(text="")],
                model=str(answer.get("model", self.model)), stop_reason=reason,
            )  # fmt: skip
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(f"malformed Messages API answer: {exc!r}") from exc


_ANTHROPIC_STOP = {
    "end_turn": "endTurn",
    "tool_use": "toolUse",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
}


def _anthropic_block(block: Any) -> dict[str, Any]:
    if isinstance(block, t.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, t.ToolUseContent):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, t.ToolResultContent):
        return {"type": "tool_result", "tool_use_id": block.tool_use_id,
                "content": [{"type": "text", "text": _tool_result_text(block)}],
                "is_error": block.is_error is True}  # fmt: skip
    if isinstance(block, t.ImageContent):
        return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type,
                                            "data": block.data}}  # fmt: skip
    raise ValueError(f"AnthropicModel cannot send {type(block).__name__} content")

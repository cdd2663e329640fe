"""What a [`MockServer`][trio_mcp.testing.MockServer] serves: tools, resources, templates, prompts.

Plain records plus the two bits of logic they need: inferring a tool's JSON Schema from its
Python signature, and matching a URI against a (level 1, ``{name}``) URI template.
"""

from __future__ import annotations

import base64
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union

import trio

__all__ = [
    "JSONDict",
    "OpenConnection",
    "PromptEntry",
    "ResourceEntry",
    "ServerState",
    "TemplateEntry",
    "ToolEntry",
    "accepted_parameters",
    "compile_uri_template",
    "infer_input_schema",
    "match_uri_template",
    "resource_contents",
]

JSONDict = dict[str, Any]


@dataclass
class ToolEntry:
    """A registered tool: its wire definition and the function that runs it."""

    name: str
    function: Callable[..., Any]
    definition: JSONDict
    accepted: frozenset[str] | None
    """Parameter names the function accepts (after ``ctx``); ``None`` if it takes ``**kwargs``."""
    required: tuple[str, ...]
    task: str | None = None
    """``"optional"`` or ``"required"``: the tool may run as a task (None: never)."""


@dataclass
class ResourceEntry:
    """A registered static resource."""

    uri: str
    definition: JSONDict
    contents: JSONDict


@dataclass
class TemplateEntry:
    """A registered resource template, optionally readable through a handler."""

    uri_template: str
    definition: JSONDict
    handler: Callable[..., Any] | None
    pattern: re.Pattern[str]


@dataclass
class PromptEntry:
    """A registered prompt: static messages or a handler producing them."""

    name: str
    definition: JSONDict
    messages: Any
    handler: Callable[..., Any] | None
    required: tuple[str, ...] = field(default_factory=tuple)


class OpenConnection(Protocol):
    """What the server asks of each of its open connections (``_connection.Connection``)."""

    @property
    def legacy(self) -> bool:
        """Whether the connection was initialized (legacy era)."""
        ...

    async def notify_list_changed(self, kind: str) -> None:
        """Send ``notifications/<kind>/list_changed`` where the client asked for it."""
        ...

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to clients subscribed to ``uri``."""
        ...

    async def notify_listeners(self, key: str, method: str, params: JSONDict, match: Any) -> None:
        """Send ``method`` on the listen streams that honour the filter field ``key``."""
        ...

    async def end_subscriptions(self) -> None:
        """Close every listen stream gracefully."""
        ...

    async def crash(self, exit_code: int | None = None, stderr: str = "") -> None:
        """End the connection abruptly."""
        ...

    async def client_request(self, method: str, params: JSONDict | None) -> JSONDict:
        """Send a server-to-client request and return the client's result."""
        ...


class ServerState:
    """Everything a [`MockServer`][trio_mcp.testing.MockServer] serves, plus bookkeeping its
    connections share."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: dict[str, TemplateEntry] = {}
        self.prompts: dict[str, PromptEntry] = {}
        self.completion: Callable[..., Any] | None = None
        self.connections: list[OpenConnection] = []
        self.issued_states: dict[str, tuple[str, str, int, JSONDict]] = {}
        """requestState issued -> (method, target, round, the input responses known by then)."""
        self.state_serial: int = 0
        self._lot = trio.lowlevel.ParkingLot()

    def capabilities(self) -> JSONDict:
        """The server capabilities implied by what is registered right now."""
        capabilities: JSONDict = {"logging": {}}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self.resources or self.templates:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self.completion is not None:
            capabilities["completions"] = {}
        return capabilities

    def wake(self) -> None:
        """Wake every task waiting in `wait()`."""
        self._lot.unpark_all()

    async def wait(self) -> None:
        """Wait until the next `wake()`."""
        await self._lot.park()


_BUILTIN_NAMES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
}


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Any:
    """Evaluate a string annotation, falling back to its builtin base name (or ``Any``)."""
    for _ in range(3):  # "'str'" under postponed evaluation is a string of a string
        if not isinstance(annotation, str):
            return annotation
        try:
            annotation = eval(annotation, namespace)
        except Exception:
            return _BUILTIN_NAMES.get(annotation.split("[")[0].split("|")[0].strip(), Any)
    return Any


def _json_type(annotation: Any) -> JSONDict:
    """Map a Python annotation to a (small) JSON Schema."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Union or (isinstance(annotation, types.UnionType)):
        others = [a for a in args if a is not type(None)]
        if len(others) == 1:
            return _json_type(others[0])
        return {"anyOf": [_json_type(a) for a in others]}
    if origin is Literal:
        return {"enum": list(args)}
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is dict or origin is dict or origin is Mapping:
        return {"type": "object"}
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        schema: JSONDict = {"type": "array"}
        if origin is not None and len(args) == 1:
            schema["items"] = _json_type(args[0])
        return schema
    return {}


def infer_input_schema(
    function: Callable[..., Any],
) -> tuple[JSONDict, frozenset[str] | None, tuple[str, ...]]:
    """Infer a tool's ``inputSchema`` from the parameters after its ``ctx`` argument.

    Returns:
        The schema, the accepted parameter names (``None`` when the function takes
        ``**kwargs``) and the required parameter names.
    """
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # some annotation can't be resolved: resolve them one by one
        hints = {}
        namespace: dict[str, Any] = getattr(function, "__globals__", {})
        for parameter in signature.parameters.values():
            hints[parameter.name] = _resolve(parameter.annotation, namespace)
    parameters = list(signature.parameters.values())[1:]
    properties: JSONDict = {}
    required: list[str] = []
    accepted: set[str] | None = set()
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            accepted = None
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if accepted is not None:
            accepted.add(parameter.name)
        schema = _json_type(hints.get(parameter.name, parameter.annotation))
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
        elif isinstance(parameter.default, (str, int, float, bool)):
            schema["default"] = parameter.default
        properties[parameter.name] = schema
    result: JSONDict = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result, (frozenset(accepted) if accepted is not None else None), tuple(required)


def accepted_parameters(function: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword parameters a handler takes after ``ctx``; ``None`` if it takes ``**kwargs``."""
    names: set[str] = set()
    for parameter in list(inspect.signature(function).parameters.values())[1:]:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            names.add(parameter.name)
    return frozenset(names)


def check_handler(
    what: str,
    handler: Callable[..., Any],
    shape: str,
    positional: Sequence[str],
    keywords: Iterable[str] = (),
) -> None:
    """Fail at registration, not at the first call, when ``handler`` cannot take its call.

    Args:
        what: What is being registered, for the message (``"prompt 'greet'"``).
        handler: The handler given.
        shape: How it is called, for the message (``"handler(ctx, **arguments)"``).
        positional: The names of the positional arguments it is called with.
        keywords: The keyword arguments it may be called with (declared argument names).

    Raises:
        TypeError: Saying how the handler is called, what its signature is, and why the two
            do not fit.
    """
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    try:
        signature.bind(*positional, **dict.fromkeys(keywords))
    except TypeError as exc:
        name = getattr(handler, "__name__", type(handler).__name__)
        raise TypeError(
            f"{what}: the handler is called as {shape}, but {name}{signature} cannot take "
            f"that ({exc}); for example: def {name}({', '.join([*positional, *keywords])}): ..."
        ) from None


_VARIABLE = re.compile(r"\{([A-Za-z0-9_.]+)\}")


def compile_uri_template(uri_template: str) -> re.Pattern[str]:
    """Compile a level-1 URI template (``file:///{path}``) into a matching regex."""
    parts: list[str] = []
    position = 0
    for match in _VARIABLE.finditer(uri_template):
        parts.append(re.escape(uri_template[position : match.start()]))
        parts.append(f"(?P<{match.group(1).replace('.', '_')}>[^/?#]+)")
        position = match.end()
    parts.append(re.escape(uri_template[position:]))
    return re.compile("".join(parts) + r"\Z")


def match_uri_template(pattern: re.Pattern[str], uri: str) -> dict[str, str] | None:
    """The template variables if ``uri`` matches ``pattern``, else ``None``."""
    match = pattern.match(uri)
    return match.groupdict() if match else None


def resource_contents(
    uri: str, *, text: str | None, blob: bytes | str | None, mime_type: str | None
) -> JSONDict:
    """Build one ``TextResourceContents`` or ``BlobResourceContents`` object."""
    contents: JSONDict = {"uri": uri}
    if mime_type is not None:
        contents["mimeType"] = mime_type
    if blob is not None:
        contents["blob"] = (
            base64.b64encode(blob).decode("ascii") if isinstance(blob, bytes) else blob
        )
    else:
        contents["text"] = text if text is not None else ""
    return contents

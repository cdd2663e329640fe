"""Server-to-client requests: sampling, elicitation, roots.

The same handlers serve both eras: legacy servers send real JSON-RPC requests
(``sampling/createMessage``, ``elicitation/create``, ``roots/list``); modern servers put the
same requests into the ``inputRequests`` of an ``input_required`` result (multi-round-trip).
Either way the handler receives the typed params and a
[`RequestContext`][trio_mcp.handlers.RequestContext] (defined with the session in
`trio_mcp._session`, as it names the session's type), and returns the typed result or the same as a
plain dict in wire form.
"""

from __future__ import annotations

import datetime
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, cast

import msgspec
from msgspec import UNSET

from . import types as t
from ._exceptions import ElicitationContentError
from ._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND

__all__ = [
    "HandlerError",
    "Roots",
    "RootsValue",
    "ServerRequestHandlers",
    "apply_elicitation_defaults",
    "validate_elicitation_content",
]

logger = logging.getLogger("trio_mcp")
_any_decoder = msgspec.json.Decoder()


# The handlers as stored here. Their second argument is the session's RequestContext
# (``trio_mcp._session``, which names the session's own type, so it cannot live below the
# session): passed through untouched, hence ``Any``. The public, exact aliases
# (SamplingHandler, ...) are in ``trio_mcp._session``.
_Sampling: TypeAlias = Callable[
    [t.CreateMessageRequestParams, Any], Awaitable[t.CreateMessageResult | Mapping[str, Any]]
]
_Elicitation: TypeAlias = Callable[
    [t.ElicitRequestFormParams | t.ElicitRequestURLParams, Any],
    Awaitable[t.ElicitResult | Mapping[str, Any]],
]
RootsValue: TypeAlias = t.ListRootsResult | Sequence[t.Root | str] | Mapping[str, Any]
"""What a roots handler may return."""


class Roots:
    """A mutable set of roots that tells servers when it changes.

    Pass it as ``open_mcp_session(roots=Roots([...]))``: the client then declares
    ``roots.listChanged`` and, after each change, sends ``notifications/roots/list_changed``
    to every legacy-era session serving it (modern servers ask for roots in each request,
    so they always see the current set). One set may serve many sessions.

    Every root is a ``file://`` URI, as the spec requires.

    Args:
        roots: The initial roots ([`Root`][trio_mcp.types.Root] objects or ``file://`` URIs).

    Raises:
        ValueError: A root is not a ``file://`` URI.
    """

    def __init__(self, roots: Iterable[t.Root | str] = ()) -> None:
        self._roots: dict[str, t.Root] = {}
        self._listeners: list[Callable[[], Awaitable[None]]] = []
        for root in roots:
            checked = self._checked(root)
            self._roots[checked.uri] = checked

    @staticmethod
    def _checked(root: t.Root | str) -> t.Root:
        value = t.Root(uri=root) if isinstance(root, str) else root
        if not isinstance(value, t.Root):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"a root is a trio_mcp.Root or a file:// URI, not {root!r}")
        if not value.uri.startswith("file://"):
            raise ValueError(f"a root must be a file:// URI, not {value.uri!r}")
        return value

    def __iter__(self) -> Iterator[t.Root]:
        return iter(list(self._roots.values()))

    def __len__(self) -> int:
        return len(self._roots)

    def __contains__(self, uri: object) -> bool:
        return uri in self._roots

    def __repr__(self) -> str:
        return f"Roots({list(self._roots)!r})"

    async def add(self, root: t.Root | str) -> None:
        """Add a root (or replace the one with the same URI) and announce the change.

        Args:
            root: A [`Root`][trio_mcp.types.Root] or a ``file://`` URI.

        Raises:
            ValueError: Not a ``file://`` URI.
        """
        checked = self._checked(root)
        if self._roots.get(checked.uri) == checked:
            await _checkpoint()
            return
        self._roots[checked.uri] = checked
        await self._changed()

    async def remove(self, uri: str) -> None:
        """Remove the root with ``uri`` (if present) and announce the change.

        Args:
            uri: The root's URI.
        """
        if self._roots.pop(uri, None) is None:
            await _checkpoint()
            return
        await self._changed()

    async def replace(self, roots: Iterable[t.Root | str]) -> None:
        """Replace every root at once, with one announcement (none if nothing changed).

        Args:
            roots: The new roots.

        Raises:
            ValueError: A root is not a ``file://`` URI (nothing is changed then).
        """
        new: dict[str, t.Root] = {}
        for root in roots:
            checked = self._checked(root)
            new[checked.uri] = checked
        if new == self._roots:
            await _checkpoint()
            return
        self._roots = new
        await self._changed()

    async def _changed(self) -> None:
        await _checkpoint()
        for listener in list(self._listeners):
            await listener()

    def _listen(self, listener: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove


async def _checkpoint() -> None:
    import trio

    await trio.lowlevel.checkpoint()


def listen_to_roots(roots: Roots, listener: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Internal: call ``listener`` after every change of ``roots``; returns the remover."""
    return roots._listen(listener)  # pyright: ignore[reportPrivateUsage]


_RootsSource: TypeAlias = Callable[[Any], Awaitable[RootsValue]] | Sequence[t.Root | str] | Roots


class HandlerError(Exception):
    """Raise in a handler to answer with a specific JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message)


def _to_wire(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return t.to_builtins(value)
    if isinstance(value, Mapping):
        return dict(cast("Mapping[str, Any]", value))
    return value


_ELICIT_ACTIONS = ("accept", "decline", "cancel")
_T = TypeVar("_T")


def _decode_params(method: str, raw: bytes, kind: type[_T] | None) -> Any:
    """The server's params for ``method``, decoded; ``-32602`` when they do not decode."""
    try:
        if kind is None:
            return _any_decoder.decode(raw)
        return t.decoder_for(kind).decode(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError) as exc:  # peer input
        raise HandlerError(INVALID_PARAMS, f"invalid params for {method}: {exc}") from exc


def _handler_failed(method: str) -> str:
    return f"internal error: the client could not handle {method}"


async def _run_handler(method: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """Await the application's handler; its failures are its own (``-32603``, logged).

    A [`HandlerError`][trio_mcp.handlers.HandlerError] goes out as raised; any other exception is
    logged with its traceback and becomes a generic internal error, whatever its type: a
    ``ValueError`` inside a handler says nothing about the server's params.
    """
    try:
        return _to_wire(await call())
    except HandlerError:
        raise
    except Exception as exc:
        logger.error("the client's handler for %s raised %r", method, exc, exc_info=True)
        raise HandlerError(INTERNAL_ERROR, _handler_failed(method)) from exc


def _sampling_answer(params: t.CreateMessageRequestParams, result: Any) -> Any:
    """A sampling answer the request allows: one content block unless tools were offered.

    Content arrays are for tool use (2025-11-25): a server that offered no tools validates
    ``content`` as a single block (the TypeScript SDK rejects a list). A list of one block
    is sent as that block; a longer one is the handler's bug (logged, ``-32603``).
    """
    given: object = result
    if (params.tools is not UNSET and params.tools) or not isinstance(given, dict):
        return result
    content: object = cast("dict[str, Any]", given).get("content")
    if not isinstance(content, list):
        return result
    blocks = cast("list[Any]", content)  # type: ignore[redundant-cast]  # (pyright: Unknown)
    if len(blocks) != 1:
        logger.error(
            "the sampling handler answered %d content blocks to a request without tools, "
            "which takes exactly one: nothing was forwarded to the server",
            len(blocks),
        )
        raise HandlerError(INTERNAL_ERROR, _handler_failed("sampling/createMessage"))
    answer = dict(cast("dict[str, Any]", result))
    answer["content"] = blocks[0]
    return answer


def apply_elicitation_defaults(schema: Mapping[str, Any] | None, content: Any) -> Any:
    """Fill ``default`` values of a form's requested schema into accepted content (SEP-1034).

    Properties the user left out but whose schema has a ``default`` are added; values the
    user gave are never changed.
    """
    given: object = content
    if not isinstance(schema, Mapping) or not isinstance(given, dict):
        return content
    properties: object = schema.get("properties")
    if not isinstance(properties, Mapping):
        return content
    filled: dict[str, Any] = dict(cast("dict[str, Any]", given))
    for name, prop in cast("Mapping[str, object]", properties).items():
        if name not in filled and isinstance(prop, Mapping):
            spec = cast("Mapping[str, Any]", prop)
            if "default" in spec:
                filled[name] = spec["default"]
    return filled


class ServerRequestHandlers:
    """The session's handlers for server-to-client requests, and the capabilities they imply."""

    def __init__(
        self,
        *,
        sampling: _Sampling | None = None,
        elicitation: _Elicitation | None = None,
        roots: _RootsSource | None = None,
        elicitation_modes: Sequence[str] = ("form",),
    ) -> None:
        unknown = set(elicitation_modes) - {"form", "url"}
        if unknown or not elicitation_modes:
            raise ValueError(
                f"elicitation_modes must be a non-empty subset of ('form', 'url'), not "
                f"{tuple(elicitation_modes)!r}"
            )
        self.sampling: _Sampling | None = sampling
        self.elicitation: _Elicitation | None = elicitation
        self.roots: _RootsSource | None = roots
        self.elicitation_modes: tuple[str, ...] = tuple(elicitation_modes)
        self.extra: dict[str, Callable[[Any, Any], Awaitable[Any]]] = {}

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers support, in wire form.

        Only what the client really does is claimed: URL-mode elicitation only when asked
        for, and ``roots.listChanged`` only for a [`Roots`][trio_mcp.handlers.Roots] set (which
        announces its changes).
        """
        caps: dict[str, Any] = {}
        if self.sampling is not None:
            tools = getattr(self.sampling, "supports_tools", False) is True
            caps["sampling"] = {"tools": {}} if tools else {}
        if self.elicitation is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if isinstance(self.roots, Roots):
            caps["roots"] = {"listChanged": True}
        elif self.roots is not None:
            caps["roots"] = {}
        return caps

    def can_handle(self, method: str) -> bool:
        """Whether a handler exists for ``method``."""
        if method in self.extra:
            return True
        return (
            (method == "sampling/createMessage" and self.sampling is not None)
            or (method == "elicitation/create" and self.elicitation is not None)
            or (method == "roots/list" and self.roots is not None)
        )

    async def handle(self, method: str, params: msgspec.Raw | bytes, ctx: Any) -> Any:
        """Run the handler for ``method``; return the result in wire form.

        Errors split at one line. Params the server sent that do not decode (or that ask
        for what this client did not declare) answer ``-32602`` invalid params: only this
        client's own checks say that. Anything the handler itself raises (a ``ValueError``
        included) or returns wrongly (an elicitation ``action`` that is not ``accept``,
        ``decline`` or ``cancel``) is the application's bug: it is logged here with its
        traceback and answers ``-32603`` internal error with a generic message, so no
        internals reach the server. A [`HandlerError`][trio_mcp.handlers.HandlerError] the handler
        raises on purpose is sent as it is.

        Raises:
            HandlerError: No handler, invalid params, or the handler failed.
        """
        raw = bytes(params) if params else b"{}"
        if method in self.extra:
            decoded: Any = _decode_params(method, raw, None)
            extra = self.extra[method]
            return await _run_handler(method, lambda: extra(decoded, ctx))
        if method == "sampling/createMessage" and self.sampling is not None:
            sampling = self.sampling
            typed = _decode_params(method, raw, t.CreateMessageRequestParams)
            return _sampling_answer(typed, await _run_handler(method, lambda: sampling(typed, ctx)))
        if method == "elicitation/create" and self.elicitation is not None:
            return await self._elicit(raw, ctx)
        if method == "roots/list" and self.roots is not None:
            return await _run_handler(method, lambda: self._roots(ctx))
        raise HandlerError(METHOD_NOT_FOUND, f"the client does not support {method}")

    async def _elicit(self, raw: bytes, ctx: Any) -> Any:
        assert self.elicitation is not None
        elicitation = self.elicitation
        method = "elicitation/create"
        probe: object = _decode_params(method, raw, None)
        mode = (
            cast("dict[str, Any]", probe).get("mode", "form") if isinstance(probe, dict) else "form"
        )
        typed: t.ElicitRequestFormParams | t.ElicitRequestURLParams
        if mode == "url":
            if "url" not in self.elicitation_modes:
                raise HandlerError(
                    INVALID_PARAMS, "this client did not declare URL-mode elicitation"
                )
            typed = _decode_params(method, raw, t.ElicitRequestURLParams)
        else:
            typed = _decode_params(method, raw, t.ElicitRequestFormParams)
        result: Any = await _run_handler(method, lambda: elicitation(typed, ctx))
        given: object = result
        action: object = (
            cast("dict[str, Any]", given).get("action") if isinstance(given, dict) else None
        )
        if action not in _ELICIT_ACTIONS:
            logger.error(
                "the elicitation handler returned %s, not an ElicitResult whose action is "
                "'accept', 'decline' or 'cancel': nothing was forwarded to the server",
                f"the action {action!r}" if isinstance(result, dict) else type(result).__name__,
            )
            raise HandlerError(INTERNAL_ERROR, _handler_failed(method))
        answer = cast("dict[str, Any]", result)
        if action != "accept" or isinstance(typed, t.ElicitRequestURLParams):
            # the schema allows content only with accept (and in form mode): the user's
            # answer to a declined or cancelled form is never forwarded
            answer.pop("content", None)
            return answer
        answer["content"] = apply_elicitation_defaults(
            typed.requested_schema, answer.get("content", {})
        )
        try:
            validate_elicitation_content(typed.requested_schema, answer["content"])
        except ElicitationContentError as exc:
            logger.warning("%s", exc)
            raise HandlerError(INTERNAL_ERROR, str(exc), {"problems": exc.problems}) from exc
        return answer

    async def _roots(self, ctx: Any) -> Any:
        roots = self.roots
        if isinstance(roots, Roots):
            return {"roots": [_to_wire(root) for root in roots]}
        if callable(roots):
            value: Any = roots(ctx)
            if inspect.isawaitable(value):
                value = await value
        else:
            value = roots
        if isinstance(value, (t.ListRootsResult, Mapping)):
            return _to_wire(value)
        items: list[Any] = []
        for root in value:
            if isinstance(root, str):
                items.append({"uri": root})
            else:
                items.append(_to_wire(root))
        return {"roots": items}


_FORMATS: dict[str, Callable[[str], bool]] = {
    "email": lambda v: v.count("@") == 1 and all(v.split("@")) and " " not in v,
    "uri": lambda v: ":" in v and v.split(":", 1)[0].isalpha() and " " not in v,
    "date": lambda v: _parses(datetime.date.fromisoformat, v),
    "date-time": lambda v: "T" in v.upper() and _parses(datetime.datetime.fromisoformat, v),
}


def _parses(parse: Callable[[str], object], value: str) -> bool:
    try:
        parse(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        return False
    return True


def _options(spec: Mapping[str, Any], key: str) -> list[Any] | None:
    """The allowed values of an enum shape: ``enum`` or ``oneOf``/``anyOf`` of ``const``."""
    if isinstance(spec.get("enum"), list):
        return list(cast("list[Any]", spec["enum"]))
    options: object = spec.get(key)
    if isinstance(options, list):
        return [
            cast("Mapping[str, Any]", o).get("const")
            for o in cast("list[object]", options)
            if isinstance(o, Mapping)
        ]
    return None


def _problem(name: str, spec: Mapping[str, Any], value: Any) -> str | None:
    kind = spec.get("type")
    if kind == "boolean":
        return None if isinstance(value, bool) else "must be true or false"
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a{'n integer' if kind == 'integer' else ' number'}"
        if not math.isfinite(value):
            return "must be a finite number"
        if kind == "integer" and not float(value).is_integer():
            return "must be an integer"
        low, high = spec.get("minimum"), spec.get("maximum")
        if isinstance(low, (int, float)) and value < low:
            return f"must be at least {low}"
        if isinstance(high, (int, float)) and value > high:
            return f"must be at most {high}"
        return None
    if kind == "string":
        if not isinstance(value, str):
            return "must be a string"
        allowed = _options(spec, "oneOf")
        if allowed is not None:
            return None if value in allowed else f"must be one of {allowed}"
        low, high = spec.get("minLength"), spec.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"must be at least {low} characters"
        if isinstance(high, int) and len(value) > high:
            return f"must be at most {high} characters"
        check = _FORMATS.get(str(spec.get("format")))
        if check is not None and not check(value):
            return f"is not a valid {spec.get('format')}"
        return None
    if kind == "array":
        if not isinstance(value, list):
            return "must be a list of strings"
        chosen = cast("list[object]", value)
        if not all(isinstance(v, str) for v in chosen):
            return "must be a list of strings"
        items: object = spec.get("items")
        allowed = _options(cast("Mapping[str, Any]", items), "anyOf") if isinstance(
            items, Mapping) else None  # fmt: skip
        if allowed is not None and any(v not in allowed for v in chosen):
            return f"every item must be one of {allowed}"
        if len(set(chosen)) != len(chosen):
            return "must not repeat an item"
        low, high = spec.get("minItems"), spec.get("maxItems")
        if isinstance(low, int) and len(chosen) < low:
            return f"must have at least {low} items"
        if isinstance(high, int) and len(chosen) > high:
            return f"must have at most {high} items"
        return None
    return None  # a type this client does not know: the server checks it


def validate_elicitation_content(schema: Mapping[str, Any] | None, content: Any) -> None:
    """Check accepted form content against the ``requestedSchema`` (before it is sent).

    Covers every shape of the elicitation schema subset: strings (length, ``format``),
    numbers and integers (range), booleans, and all enum shapes of SEP-1330 (``enum``,
    titled ``oneOf``, legacy ``enumNames``, multi-select arrays with ``enum`` or ``anyOf``
    items); required properties; no properties the schema does not name.

    Args:
        schema: The request's ``requestedSchema``.
        content: The content the handler returned (after defaults were filled in).

    Raises:
        ElicitationContentError: The content does not match; ``problems`` lists how.
    """
    if not isinstance(schema, Mapping):
        return
    given: object = content
    if not isinstance(given, dict):
        raise ElicitationContentError(["content must be an object"])
    values = cast("dict[str, Any]", given)
    properties: object = schema.get("properties")
    props: Mapping[str, Any] = (
        cast("Mapping[str, Any]", properties) if isinstance(properties, Mapping) else {}
    )
    problems: list[str] = []
    required: object = schema.get("required")
    if isinstance(required, list):
        for name in cast("list[object]", required):
            if isinstance(name, str) and name not in values:
                problems.append(f"{name}: is required")
    for name, value in values.items():
        spec: object = props.get(name)
        if not isinstance(spec, Mapping):
            problems.append(f"{name}: is not in the requested schema")
            continue
        problem = _problem(name, cast("Mapping[str, Any]", spec), value)
        if problem is not None:
            problems.append(f"{name}: {problem}")
    if problems:
        raise ElicitationContentError(problems)

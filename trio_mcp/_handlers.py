"""Server-to-client requests: sampling, elicitation, roots.

The same handlers serve both eras: legacy servers send real JSON-RPC requests
(``sampling/createMessage``, ``elicitation/create``, ``roots/list``); modern servers put the
same requests into the ``inputRequests`` of an ``input_required`` result (multi-round-trip).
Either way the handler receives the typed params and a :class:`RequestContext`, and returns
the typed result or the same as a plain dict in wire form.
"""

from __future__ import annotations

import datetime
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import msgspec

from . import _types as t
from ._exceptions import ElicitationContentError
from ._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = [
    "ElicitationHandler",
    "HandlerError",
    "RequestContext",
    "Roots",
    "RootsHandler",
    "SamplingHandler",
    "ServerRequestHandlers",
    "apply_elicitation_defaults",
    "validate_elicitation_content",
]

logger = logging.getLogger("trio_mcp")
_any_decoder = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a server-to-client request handler knows about the request it serves.

    Attributes:
        session: The session the request arrived on.
        method: The request's method (``sampling/createMessage``, ...).
        request_id: The JSON-RPC id (legacy) or the ``inputRequests`` key (modern).
        server_name: The server's self-reported name, when known.
        meta: The request's ``_meta``, if any.
    """

    session: ClientSession
    method: str
    request_id: int | str
    server_name: str | None = None
    meta: Mapping[str, Any] | None = None


SamplingHandler: TypeAlias = Callable[
    [t.CreateMessageRequestParams, RequestContext],
    Awaitable[t.CreateMessageResult | Mapping[str, Any]],
]
ElicitationHandler: TypeAlias = Callable[
    [t.ElicitRequestFormParams | t.ElicitRequestURLParams, RequestContext],
    Awaitable[t.ElicitResult | Mapping[str, Any]],
]
_RootsValue: TypeAlias = t.ListRootsResult | Sequence[t.Root | str] | Mapping[str, Any]


class Roots:
    """A mutable set of roots that tells servers when it changes.

    Pass it as ``open_mcp_session(roots=Roots([...]))``: the client then declares
    ``roots.listChanged`` and, after each change, sends ``notifications/roots/list_changed``
    to every legacy-era session serving it (modern servers ask for roots in each request,
    so they always see the current set). One set may serve many sessions.

    Every root is a ``file://`` URI, as the spec requires.

    Args:
        roots: The initial roots (:class:`Root` objects or ``file://`` URIs).

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
            root: A :class:`Root` or a ``file://`` URI.

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


RootsHandler: TypeAlias = (
    Callable[[RequestContext], Awaitable[_RootsValue]] | Sequence[t.Root | str] | Roots
)


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
        sampling: SamplingHandler | None = None,
        elicitation: ElicitationHandler | None = None,
        roots: RootsHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
    ) -> None:
        unknown = set(elicitation_modes) - {"form", "url"}
        if unknown or not elicitation_modes:
            raise ValueError(
                f"elicitation_modes must be a non-empty subset of ('form', 'url'), not "
                f"{tuple(elicitation_modes)!r}"
            )
        self.sampling: SamplingHandler | None = sampling
        self.elicitation: ElicitationHandler | None = elicitation
        self.roots: RootsHandler | None = roots
        self.elicitation_modes: tuple[str, ...] = tuple(elicitation_modes)
        self.extra: dict[str, Callable[[Any, RequestContext], Awaitable[Any]]] = {}

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers support, in wire form.

        Only what the client really does is claimed: URL-mode elicitation only when asked
        for, and ``roots.listChanged`` only for a :class:`Roots` set (which announces its
        changes).
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

    async def handle(self, method: str, params: msgspec.Raw | bytes, ctx: RequestContext) -> Any:
        """Run the handler for ``method``; return the result in wire form.

        Raises:
            HandlerError: No handler, invalid params, or the handler failed.
        """
        raw = bytes(params) if params else b"{}"
        try:
            if method in self.extra:
                return _to_wire(await self.extra[method](_any_decoder.decode(raw), ctx))
            if method == "sampling/createMessage" and self.sampling is not None:
                typed = t.decoder_for(t.CreateMessageRequestParams).decode(raw)
                return _to_wire(await self.sampling(typed, ctx))
            if method == "elicitation/create" and self.elicitation is not None:
                return await self._elicit(raw, ctx)
            if method == "roots/list" and self.roots is not None:
                return await self._roots(ctx)
        except (msgspec.MsgspecError, ValueError, RecursionError) as exc:  # peer input
            raise HandlerError(INVALID_PARAMS, f"invalid params for {method}: {exc}") from exc
        except HandlerError:
            raise
        except ElicitationContentError as exc:
            logger.warning("%s", exc)
            raise HandlerError(INTERNAL_ERROR, str(exc), {"problems": exc.problems}) from exc
        except Exception as exc:
            logger.warning("handler for %s raised %r", method, exc, exc_info=True)
            raise HandlerError(
                INTERNAL_ERROR, f"client handler for {method} failed: {exc}"
            ) from exc
        raise HandlerError(METHOD_NOT_FOUND, f"the client does not support {method}")

    async def _elicit(self, raw: bytes, ctx: RequestContext) -> Any:
        assert self.elicitation is not None
        probe: object = _any_decoder.decode(raw)
        mode = (
            cast("dict[str, Any]", probe).get("mode", "form") if isinstance(probe, dict) else "form"
        )
        typed: t.ElicitRequestFormParams | t.ElicitRequestURLParams
        if mode == "url":
            if "url" not in self.elicitation_modes:
                raise HandlerError(
                    INVALID_PARAMS, "this client did not declare URL-mode elicitation"
                )
            typed = t.decoder_for(t.ElicitRequestURLParams).decode(raw)
        else:
            typed = t.decoder_for(t.ElicitRequestFormParams).decode(raw)
        result: Any = _to_wire(await self.elicitation(typed, ctx))
        if isinstance(typed, t.ElicitRequestFormParams) and isinstance(result, dict):
            answer = cast("dict[str, Any]", result)
            if answer.get("action") == "accept":
                answer["content"] = apply_elicitation_defaults(
                    typed.requested_schema, answer.get("content", {})
                )
                validate_elicitation_content(typed.requested_schema, answer["content"])
        return result  # pyright: ignore[reportUnknownVariableType]

    async def _roots(self, ctx: RequestContext) -> Any:
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

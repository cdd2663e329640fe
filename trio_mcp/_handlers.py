"""Server-to-client requests: sampling, elicitation, roots.

The same handlers serve both eras: legacy servers send real JSON-RPC requests
(``sampling/createMessage``, ``elicitation/create``, ``roots/list``); modern servers put the
same requests into the ``inputRequests`` of an ``input_required`` result (multi-round-trip).
Either way the handler receives the typed params and a :class:`RequestContext`, and returns
the typed result or the same as a plain dict in wire form.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import msgspec

from . import _types as t
from ._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = [
    "ElicitationHandler",
    "HandlerError",
    "RequestContext",
    "RootsHandler",
    "SamplingHandler",
    "ServerRequestHandlers",
    "apply_elicitation_defaults",
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
RootsHandler: TypeAlias = (
    Callable[[RequestContext], Awaitable[_RootsValue]] | Sequence[t.Root | str]
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
        for, and no ``roots.listChanged`` (the roots are static).
        """
        caps: dict[str, Any] = {}
        if self.sampling is not None:
            caps["sampling"] = {}
        if self.elicitation is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
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
        return result  # pyright: ignore[reportUnknownVariableType]

    async def _roots(self, ctx: RequestContext) -> Any:
        roots = self.roots
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

"""Adversarial peer input for the property suites: a byte-exact JSON writer and strategies.

The strategies build *templates*, not bytes: plain Python values plus a few markers that
:func:`dump` writes in ways no JSON library would, so that invalid UTF-8 inside a string,
nesting thousands of levels deep, out-of-range numbers and duplicate keys can appear in any
field. A :class:`Slot` names a value known only at run time (the id of the request that is in
flight, of the ``subscriptions/listen`` request, ...), filled in by :func:`dump`'s ``slots``.

:data:`MESSAGES_FED` counts every frame the suites hand to a client; ``tests/conftest.py``
prints the total at the end of the run.
"""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import msgspec
import trio
from hypothesis import strategies as st

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = [
    "ABSENT",
    "MESSAGES_FED",
    "Bad",
    "Deep",
    "Obj",
    "Outcome",
    "Raw",
    "Slot",
    "Splice",
    "any_json",
    "batches",
    "dump",
    "garbage_bytes",
    "malformed_responses",
    "mutated_frames",
    "plausible_messages",
    "server_requests",
    "targeted_notifications",
    "user_nursery",
]

MESSAGES_FED = [0]  # one cell, so importers share it


# -- the writer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """A JSON string whose content holds ``invalid`` (bytes that are not UTF-8) in the middle."""

    before: str
    invalid: bytes
    after: str


@dataclass(frozen=True)
class Deep:
    """A value nested ``depth`` levels deep: ``[[[...]]]`` or ``{"a":{"a":...}}``."""

    depth: int
    kind: str = "list"


@dataclass(frozen=True)
class Raw:
    """JSON text written verbatim (numbers out of every range, odd spellings)."""

    text: bytes


@dataclass(frozen=True)
class Obj:
    """A JSON object as key/value pairs: keys may repeat and may be :class:`Bad`."""

    pairs: tuple[tuple[Any, Any], ...]


@dataclass(frozen=True)
class Splice:
    """Fixed JSON text with a slot's value written between ``before`` and ``after``."""

    before: bytes
    slot: str
    after: bytes


@dataclass(frozen=True)
class Slot:
    """A value filled in at run time from ``dump``'s ``slots`` (``None`` when unknown)."""

    name: str


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""A field value meaning "leave this field out"."""


def _string(text: str) -> bytes:
    return msgspec.json.encode(text)


def dump(value: Any, slots: dict[str, Any] | None = None) -> bytes:
    """Write a template as JSON bytes (possibly invalid on purpose)."""
    out: list[bytes] = []
    _write(value, slots or {}, out)
    return b"".join(out)


def _write(value: Any, slots: dict[str, Any], out: list[bytes]) -> None:
    if isinstance(value, Slot):
        value = slots.get(value.name)
    if value is None:
        out.append(b"null")
    elif value is True:
        out.append(b"true")
    elif value is False:
        out.append(b"false")
    elif isinstance(value, int):
        out.append(str(value).encode())
    elif isinstance(value, float):
        out.append(repr(value).encode() if math.isfinite(value) else b"0")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, Bad):
        out.append(_string(value.before)[:-1] + value.invalid + _string(value.after)[1:])
    elif isinstance(value, Raw):
        out.append(value.text)
    elif isinstance(value, Splice):
        out.append(value.before)
        _write(Slot(value.slot), slots, out)
        out.append(value.after)
    elif isinstance(value, Deep):
        if value.kind == "dict":
            out.append(b'{"a":' * value.depth + b"1" + b"}" * value.depth)
        else:
            out.append(b"[" * value.depth + b"]" * value.depth)
    elif isinstance(value, (list, tuple)):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _write(item, slots, out)
        out.append(b"]")
    elif isinstance(value, (dict, Obj)):
        pairs = value.pairs if isinstance(value, Obj) else tuple(value.items())
        out.append(b"{")
        first = True
        for key, item in pairs:
            if item is ABSENT:
                continue
            if not first:
                out.append(b",")
            first = False
            _write(key if isinstance(key, Bad) else str(key), slots, out)
            out.append(b":")
            _write(item, slots, out)
        out.append(b"}")
    else:  # pragma: no cover - a bug in a strategy
        raise TypeError(f"cannot write {value!r}")


# -- building blocks ---------------------------------------------------------------------------

INVALID_UTF8 = (
    b"\xff",
    b"\xfe\xfe",
    b"\x80",
    b"\xc3\x28",  # a lead byte without its continuation
    b"\xe2\x28\xa1",
    b"\xed\xa0\x80",  # an encoded surrogate
    b"\xf0\x28\x8c\x28",
    b"\xc0\xaf",  # overlong
    b"\xf8\x88\x80\x80\x80",  # five-byte form
    b"\xf4\x90\x80\x80",  # beyond U+10FFFF
)

bad_strings = st.builds(
    Bad, st.text(max_size=6), st.sampled_from(INVALID_UTF8), st.text(max_size=6)
)
deep = st.builds(Deep, st.integers(5_000, 12_000), st.sampled_from(["list", "dict"]))
odd_numbers = st.sampled_from(
    [
        Raw(b"1e400"),
        Raw(b"-1e400"),
        Raw(b"1" + b"0" * 400),
        Raw(b"-" + b"9" * 50),
        Raw(b"-0"),
        Raw(b"1.5e-400"),
        Raw(b"0.0"),
        Raw(b"1E2"),
        Raw(b"18446744073709551616"),
        Raw(b"-9223372036854775809"),
        Raw(b"9223372036854775807"),
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    bad_strings,
    odd_numbers,
)
keys = st.one_of(st.text(max_size=8), bad_strings)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def _anything(draw: st.DrawFn) -> Any:
    # One value in twenty nests thousands deep; shrinking (towards 0) leads away from it.
    return draw(deep) if draw(st.integers(0, 19)) == 19 else draw(values)


anything = _anything()
"""Any JSON value, invalid UTF-8 and extreme nesting included."""

any_json = anything


def field(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value, or :data:`ABSENT` (the field is left out)."""
    return st.one_of(st.just(ABSENT), strategy)


def params_like(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with these fields (each maybe absent, maybe garbage), or something else."""
    as_object = st.fixed_dictionaries({name: field(s) for name, s in fields.items()}).map(
        lambda d: Obj(tuple(d.items()))
    )
    return st.one_of(as_object, as_object, anything)


def _message(pairs: dict[str, Any]) -> Obj:
    return Obj(tuple(pairs.items()))


# fields that go wrong in every way
ID_GARBAGE = st.one_of(
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=4), scalars, max_size=3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from([2**63, 2**64, 2**100, -(2**63) - 1, -(2**200)]),
    odd_numbers,
    bad_strings,
    deep,
)
"""Request ids no JSON-RPC peer may send (plus null, allowed only on error responses)."""

UNKNOWN_IDS = st.one_of(st.integers(10**6, 2**53), st.integers(-(2**53), -1), st.text(max_size=8))
"""Well-formed ids that no request of the client's can have (its ids are small positives)."""

METHODS = (
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/subscriptions/acknowledged",
    "notifications/elicitation/complete",
    "notifications/tasks/status",
    "notifications/initialized",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "ping",
    "tasks/get",
    "tools/call",
    "x-vendor/unknown",
    "",
    "notifications/",
)
methods = st.one_of(
    st.sampled_from(METHODS),
    st.text(max_size=20),
    st.builds(
        Bad,
        st.sampled_from(["notifications/", "", "sampling/"]),
        st.sampled_from(INVALID_UTF8),
        st.text(max_size=4),
    ),
    st.integers(),
    st.none(),
    st.booleans(),
    st.lists(st.text(max_size=4), max_size=2),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
)
jsonrpc_versions = st.one_of(
    st.just("2.0"),
    st.just("2.0"),
    st.sampled_from(["1.0", "2", "", "2.00", Raw(b"2.0"), None]),
    bad_strings,
    values,
)
error_objects = st.one_of(
    params_like(
        {
            "code": st.one_of(st.integers(-(2**31), 2**31), ID_GARBAGE, st.text(max_size=6)),
            "message": st.one_of(st.text(max_size=20), bad_strings, values),
            "data": anything,
        }
    ),
    anything,
)


# -- message families --------------------------------------------------------------------------

garbage_bytes = st.one_of(
    st.binary(max_size=300),
    st.sampled_from([b"", b" ", b"\n", b"{", b"[", b"null", b"\xef\xbb\xbf{}", b"{}" * 50]),
)
"""Arbitrary bytes as one frame."""


@st.composite
def plausible_messages(draw: st.DrawFn) -> Obj:
    """Structurally plausible JSON-RPC with wrong types in any field.

    Responses never carry the id of a request the client is waiting for (``UNKNOWN_IDS`` or
    garbage); the ``listen`` slot is the id of an active ``subscriptions/listen``, if any.
    """
    kind = draw(st.sampled_from(["request", "notification", "response", "error", "both",
                                 "neither", "anything"]))  # fmt: skip
    pairs: dict[str, Any] = {"jsonrpc": draw(field(jsonrpc_versions))}
    if kind in ("request", "notification", "anything"):
        pairs["method"] = draw(methods if kind != "anything" else field(methods))
    if kind == "request":
        pairs["id"] = draw(st.one_of(st.integers(-5, 50), UNKNOWN_IDS, ID_GARBAGE))
    elif kind != "notification":
        pairs["id"] = draw(field(st.one_of(UNKNOWN_IDS, ID_GARBAGE, st.just(Slot("listen")))))
    if kind in ("request", "notification", "anything"):
        pairs["params"] = draw(field(anything))
    if kind in ("response", "both", "anything"):
        pairs["result"] = draw(field(anything) if kind == "anything" else anything)
    if kind in ("error", "both", "anything"):
        pairs["error"] = draw(field(error_objects) if kind == "anything" else error_objects)
    if draw(st.booleans()):
        pairs[draw(st.text(max_size=6))] = draw(values)  # an unknown member
    message = _message(pairs)
    if draw(st.integers(0, 9)) == 0:  # a duplicate key with a different value
        key = draw(st.sampled_from(["id", "method", "params", "result", "jsonrpc"]))
        # (a second id, which wins, keeps the promise above: never a pending request's id)
        value = draw(st.one_of(UNKNOWN_IDS, ID_GARBAGE) if key == "id" else anything)
        message = Obj((*message.pairs, (key, value)))
    return message


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ids_or_slots = st.one_of(
    st.sampled_from([Slot("pending"), Slot("listen")]), UNKNOWN_IDS, ID_GARBAGE
)
meta_garbage = st.one_of(
    params_like({SUBSCRIPTION_ID: ids_or_slots, "progressToken": ids_or_slots}), anything
)


def _notification(method: str, params: st.SearchStrategy[Any]) -> st.SearchStrategy[Obj]:
    return st.builds(
        lambda p: _message({"jsonrpc": "2.0", "method": method, "params": p}), field(params)
    )


targeted_notifications = st.one_of(
    _notification(
        "notifications/cancelled",
        params_like({"requestId": ids_or_slots, "reason": values, "_meta": meta_garbage}),
    ),
    _notification(
        "notifications/progress",
        params_like(
            {
                "progressToken": ids_or_slots,
                "progress": st.one_of(st.floats(allow_nan=False), values),
                "total": values,
                "message": st.one_of(st.text(max_size=10), values),
                "_meta": meta_garbage,
            }
        ),
    ),
    _notification(
        "notifications/resources/updated",
        params_like(
            {
                "uri": st.one_of(
                    st.just("file:///a"),
                    st.lists(st.just("file:///a"), min_size=1, max_size=2),
                    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
                    bad_strings,
                    values,
                ),
                "_meta": meta_garbage,
            }
        ),
    ),
    _notification(
        "notifications/message",
        params_like(
            {
                "level": st.one_of(st.sampled_from(LOG_LEVELS), values),
                "logger": values,
                "data": anything,
            }
        ),
    ),
    _notification(
        "notifications/subscriptions/acknowledged",
        params_like({"_meta": meta_garbage, "notifications": values}),
    ),
    *(
        _notification(method, params_like({"_meta": meta_garbage}))
        for method in (
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        )
    ),
    _notification(
        "notifications/elicitation/complete",
        params_like({"elicitationId": values, "_meta": meta_garbage}),
    ),
    _notification(
        "notifications/tasks/status",
        params_like({"taskId": values, "status": values, "_meta": meta_garbage}),
    ),
)
"""Notifications the client routes (progress, cancelled, resources/updated, ...), garbled."""

_sampling_params = params_like(
    {
        "messages": st.one_of(
            st.lists(params_like({"role": values, "content": anything}), max_size=2), values
        ),
        "maxTokens": values,
        "systemPrompt": values,
        "modelPreferences": values,
        "tools": values,
        "_meta": meta_garbage,
    }
)
_elicit_params = params_like(
    {
        "mode": st.one_of(st.sampled_from(["form", "url"]), values),
        "message": values,
        "requestedSchema": st.one_of(
            params_like({"type": values, "properties": values, "required": values}), anything
        ),
        "url": values,
        "elicitationId": values,
        "_meta": meta_garbage,
    }
)
_LETTER_IDS = st.text(alphabet="abcdefghij", min_size=1, max_size=8)


def _server_requests(ids: st.SearchStrategy[Any]) -> st.SearchStrategy[Obj]:
    return st.builds(
        lambda request_id, method_params: _message(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method_params[0],
                "params": method_params[1],
            }
        ),
        ids,
        _SERVER_METHODS,
    )


_SERVER_METHODS = st.one_of(
    st.tuples(st.just("sampling/createMessage"), field(_sampling_params)),
    st.tuples(st.just("elicitation/create"), field(_elicit_params)),
    st.tuples(st.just("roots/list"), field(params_like({"_meta": meta_garbage}))),
    st.tuples(st.just("ping"), field(anything)),
    st.tuples(
        st.sampled_from(["x-vendor/unknown", "tools/list", "tasks/get", "x/\u00e9"]),
        field(anything),
    ),
)
server_requests = _server_requests(
    st.one_of(st.sampled_from([1, 2, "a"]), st.integers(), st.text(max_size=6), ID_GARBAGE)
)
"""Server-to-client requests (sampling, elicitation, roots, ping, unknown) with bad params."""

_single = st.one_of(plausible_messages(), targeted_notifications, server_requests)
batches = st.one_of(
    st.just([]),
    st.lists(_single, min_size=1, max_size=3),
    st.lists(st.lists(_single, max_size=2), min_size=1, max_size=2),  # nested batches
    st.lists(st.one_of(_single, values), min_size=1, max_size=3),
)
"""JSON-RPC batches: empty, of (garbled) messages, nested, mixed with non-messages."""


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    """A well-formed message, then cut, spliced or bit-flipped."""
    # A server request cut after its id (``{"jsonrpc":"2.0","id":4``) cannot be told from a
    # cut answer, so an id a pending request has makes it that request's broken answer (it
    # fails that request, as documented): the requests mutated here have ids no client
    # request has, and the rule itself has its own tests.
    # (letters only: no bit flip turns a letter or the quotes around it into a small number)
    base = dump(draw(st.one_of(targeted_notifications, _server_requests(_LETTER_IDS))))
    cut = draw(st.integers(0, len(base)))
    operation = draw(st.sampled_from(["truncate", "insert", "flip"]))
    if operation == "truncate":
        return base[:cut]
    if operation == "insert":
        return base[:cut] + draw(st.binary(min_size=1, max_size=4)) + base[cut:]
    if not base:  # pragma: no cover
        return base
    i = min(cut, len(base) - 1)
    return base[:i] + bytes([base[i] ^ (1 << draw(st.integers(0, 7)))]) + base[i + 1 :]


# -- responses to a pending request ------------------------------------------------------------


def _mutate_leaf(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one randomly chosen node replaced by garbage."""
    if isinstance(value, dict) and value and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _mutate_leaf(draw, value[key])}
    if isinstance(value, list) and value and draw(st.integers(0, 3)):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], _mutate_leaf(draw, value[i]), *value[i + 1 :]]
    return draw(anything)


def _nested_tool_results(depth: int, leaf: Any) -> Any:
    block: Any = leaf
    for _ in range(depth):
        block = {"type": "tool_result", "toolUseId": "u", "content": [block]}
    return {"content": [block]}


_input_requests = st.one_of(
    anything,
    st.dictionaries(
        keys,
        st.one_of(
            params_like(
                {
                    "method": st.one_of(
                        st.sampled_from(
                            [
                                "elicitation/create",
                                "sampling/createMessage",
                                "roots/list",
                                "x/unknown",
                            ]
                        ),
                        bad_strings,
                        values,
                    ),
                    "params": anything,
                }
            ),
            anything,
        ),
        min_size=1,
        max_size=3,
    ),
)


@st.composite
def malformed_responses(draw: st.DrawFn, valid_result: Any, modern: bool) -> Obj:
    """A response to the pending request (its id in the ``id`` slot) that is wrong in content.

    The envelope stays recognisable as the answer to that request (``"jsonrpc":"2.0"`` and
    the right id); what is wrong is inside: the result's shape or leaves, invalid UTF-8,
    nesting, both or neither of result and error, a malformed error object, and in the
    modern era ``resultType``/``inputRequests``/``requestState``.
    """
    head = {"jsonrpc": "2.0", "id": Slot("id")}
    families = ["shape", "leaf", "neither", "both", "error", "deep", "nested", "duplicate"]
    if modern:
        families += ["result_type", "input_required", "input_required"]
    family = draw(st.sampled_from(families))
    if family == "shape":
        return _message({**head, "result": draw(anything)})
    if family == "leaf":
        return _message({**head, "result": _mutate_leaf(draw, valid_result)})
    if family == "neither":
        return _message(head)
    if family == "both":
        result = draw(st.one_of(st.just(valid_result), anything))
        return _message({**head, "result": result, "error": draw(error_objects)})
    if family == "error":
        return _message({**head, "error": draw(error_objects)})
    if family == "deep":
        return _message({**head, "result": {**valid_result, "_meta": draw(deep)}})
    if family == "nested":
        leaf = draw(st.one_of(st.just({"type": "x-unknown", "v": 1}), values))
        return _message({**head, "result": _nested_tool_results(draw(st.integers(100, 400)), leaf)})
    if family == "duplicate":
        return Obj((*_message({**head, "result": valid_result}).pairs, ("result", draw(values))))
    if family == "result_type":
        kind = draw(st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                              st.lists(scalars, max_size=2), bad_strings, st.none(),
                              st.sampled_from(["", "streaming", "COMPLETE"])))  # fmt: skip
        return _message({**head, "result": {**valid_result, "resultType": kind}})
    result = {
        "resultType": "input_required",
        "inputRequests": draw(field(_input_requests)),
        "requestState": draw(field(st.one_of(st.text(max_size=8), bad_strings, values))),
    }
    return _message({**head, "result": result})


# -- running scenarios -------------------------------------------------------------------------


@asynccontextmanager
async def user_nursery() -> AsyncIterator[trio.Nursery]:
    """A nursery standing for the user's own, which the session must never crash.

    An exception from the body is re-raised bare; anything a task in the nursery raised (the
    session's tasks run there) fails the test with an :class:`AssertionError` saying so.
    The nursery is cancelled when the body ends.
    """
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            try:
                yield nursery
            except BaseException as exc:
                body_error = exc
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise AssertionError(
            f"an exception reached the user's nursery: {group!r}"
            + (f" (the test body then failed with {body_error!r})" if body_error else "")
        ) from group
    if body_error is not None:
        raise body_error


class Outcome:
    """The outcome of a call run in another task: its value or its exception."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value: Any = None
        self.error: Exception | None = None

    async def capture(self, function: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``function(*args)``, keeping its value or exception (never raising it)."""
        try:
            self.value = await function(*args)
        except Exception as exc:
            self.error = exc
        finally:
            self.done.set()

    async def get(self, what: str = "the call") -> Any:
        """Wait for the call to end; return its value, or fail saying what it raised."""
        await self.done.wait()
        if self.error is not None:
            raise AssertionError(f"{what} failed: {self.error!r}") from self.error
        return self.value

"""Decoding protocol types: the fast strict path, and the tolerant one when it fails.

:func:`decoder_for` gives the cached :class:`Decoder` of a type; :func:`from_builtins`
converts already-decoded JSON; :func:`peek_result_type` reads a raw result's
``resultType``. These are the session engine's entry points (not in ``__all__``); the
untagged unions (elicitation params, resource contents, input responses) are dispatched
here by the keys present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar, overload

import msgspec

from ._content import AnyResourceContents, _resource_contents
from ._elicitation import ElicitRequestParams, _elicit_params
from ._input import InputResponse, InputResponses, _input_response, _input_responses_from
from ._tolerant import _convert, _repair

_T = TypeVar("_T")

_any_decoder: Final = msgspec.json.Decoder()


_UNTAGGED: Final[dict[Any, Callable[[Any], Any]]] = {
    ElicitRequestParams: _elicit_params,
    AnyResourceContents: _resource_contents,
    InputResponse: _input_response,
    InputResponses: _input_responses_from,
}


class Decoder(Generic[_T]):
    """A reusable JSON decoder for one protocol type, tolerant of unknown content blocks.

    The strict msgspec decoder runs first; only when it rejects a message (for instance
    because a content block has a ``type`` from a newer revision) does the slower tolerant
    path run, which keeps such blocks as :class:`UnknownContent`.
    """

    __slots__ = ("_fast", "_special", "_type")

    def __init__(self, tp: Any) -> None:
        self._type = tp
        self._special = _UNTAGGED.get(tp)
        self._fast: msgspec.json.Decoder[Any] | None = (
            None if self._special is not None else msgspec.json.Decoder(tp)
        )

    def decode(self, data: bytes | bytearray | memoryview | msgspec.Raw) -> _T:
        """Decode one JSON document.

        Args:
            data: The JSON bytes (a :class:`msgspec.Raw` slice of an envelope works too).

        Returns:
            The decoded value.

        Raises:
            msgspec.DecodeError: The bytes are not valid JSON.
            msgspec.ValidationError: The JSON does not match the type.
        """
        if self._fast is not None:
            try:
                return self._fast.decode(data)  # type: ignore[no-any-return]
            except msgspec.ValidationError as exc:
                return _repair(_any_decoder.decode(data), self._type, exc)  # type: ignore[no-any-return]
        assert self._special is not None
        return self._special(_any_decoder.decode(data))  # type: ignore[no-any-return]


_decoders: dict[Any, Decoder[Any]] = {}


@overload
def decoder_for(tp: type[_T]) -> Decoder[_T]: ...
@overload
def decoder_for(tp: Any) -> Decoder[Any]: ...
def decoder_for(tp: Any) -> Decoder[Any]:
    """Return the cached :class:`Decoder` for a protocol type (or union, list, dict of them).

    Args:
        tp: The type to decode, e.g. ``CallToolResult`` or ``list[Tool]``.

    Returns:
        A decoder built once per type and reused.
    """
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = Decoder(tp)
    return decoder


@overload
def from_builtins(obj: Any, tp: type[_T]) -> _T: ...
@overload
def from_builtins(obj: Any, tp: Any) -> Any: ...
def from_builtins(obj: Any, tp: Any) -> Any:
    """Convert already-decoded JSON (dicts, lists, ...) to a protocol type, tolerantly.

    Like :func:`msgspec.convert`, but unknown content blocks become :class:`UnknownContent`.

    Args:
        obj: Decoded JSON.
        tp: The target type.

    Returns:
        The converted value.

    Raises:
        msgspec.ValidationError: ``obj`` does not match the type.
    """
    special = _UNTAGGED.get(tp)
    if special is not None:
        return special(obj)
    return _convert(obj, tp)


class _ResultTypePeek(msgspec.Struct):
    result_type: str = msgspec.field(default="complete", name="resultType")


_peek_decoder: Final = msgspec.json.Decoder(_ResultTypePeek)


def peek_result_type(data: bytes | bytearray | memoryview | msgspec.Raw) -> str:
    """Return a raw result's ``resultType`` (``"complete"`` when absent, as legacy servers do).

    Args:
        data: The raw JSON of a ``result`` member.

    Returns:
        ``"complete"``, ``"input_required"``, or whatever newer value the server sent.

    Raises:
        msgspec.DecodeError: The bytes are not valid JSON.
        msgspec.ValidationError: The result is not an object or ``resultType`` is not a string.
    """
    return _peek_decoder.decode(data).result_type

"""The tolerant slow path: decoded JSON to a protocol type, keeping unknown content blocks.

`_convert()` tries `msgspec.convert()` and, when it fails, `_repair()` descends
into the value and rebuilds it field by field, so that a content block of a ``type`` this
library does not know becomes an [`UnknownContent`][trio_mcp.types.UnknownContent] instead of
failing the whole message. The decoders of [`trio_mcp.types`][trio_mcp.types] fall back on it.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Final, Union, cast, get_args, get_origin

import msgspec
from msgspec import UnsetType

from ._content import _CONTENT_TYPES, UnknownContent

_UNION_ORIGINS: Final = (Union, types.UnionType)


def _convert(obj: Any, tp: Any) -> Any:
    """Convert builtins to ``tp``, tolerating unknown content blocks anywhere inside."""
    try:
        return msgspec.convert(obj, tp)
    except msgspec.ValidationError as exc:
        return _repair(obj, tp, exc)


def _mapping(obj: Any) -> dict[str, Any] | None:
    """Return ``obj`` typed as a JSON object, or None if it is not one."""
    return cast("dict[str, Any]", obj) if isinstance(obj, dict) else None


@functools.cache
def _fields(tp: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """The fields of a struct type, resolved once."""
    return msgspec.structs.fields(tp)


def _is_object_type(tp: Any) -> bool:
    """Whether ``tp`` decodes from a JSON object (a Struct or a dict type)."""
    if isinstance(tp, type):
        return issubclass(tp, (msgspec.Struct, dict))
    return get_origin(tp) is dict


def _repair(obj: Any, tp: Any, exc: msgspec.ValidationError) -> Any:
    """Slow path: descend into ``obj`` and rebuild it, keeping unknown content blocks."""
    mapping = _mapping(obj)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if mapping is None:
            raise exc
        config = tp.__struct_config__
        if config.tag_field is not None and mapping.get(config.tag_field, config.tag) != config.tag:
            raise exc
        kwargs: dict[str, Any] = {}
        for info in _fields(tp):
            if info.encode_name in mapping:
                kwargs[info.name] = _convert(mapping[info.encode_name], info.type)
            elif info.required:
                raise msgspec.ValidationError(
                    f"Object missing required field `{info.encode_name}`"
                ) from exc
        return tp(**kwargs)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in _UNION_ORIGINS:
        members = [arg for arg in args if arg is not UnsetType]
        if mapping is not None:
            tagged = [
                m
                for m in members
                if isinstance(m, type)
                and issubclass(m, msgspec.Struct)
                and m.__struct_config__.tag_field is not None
            ]
            for member in tagged:
                config = member.__struct_config__
                if config.tag_field is not None and mapping.get(config.tag_field) == config.tag:
                    return _convert(mapping, member)
            if isinstance(mapping.get("type"), str) and any(m in _CONTENT_TYPES for m in tagged):
                return UnknownContent(mapping)
            for member in members:  # msgspec allows one untagged object type per union
                if member not in tagged and _is_object_type(member):
                    return _convert(mapping, member)
        elif isinstance(obj, list):
            for member in members:
                if get_origin(member) is list:
                    return _convert(obj, member)
        raise exc
    if origin is list and isinstance(obj, list):
        return [_convert(item, args[0]) for item in cast("list[object]", obj)]
    if origin is dict and mapping is not None:
        return {key: _convert(value, args[1]) for key, value in mapping.items()}
    raise exc

"""Result shaping: turn what a scripted handler returned into the protocol's result bodies.

One job: a tool's return value into a ``CallToolResult``, a prompt's into a
``GetPromptResult``, a resource template handler's into a ``ReadResourceResult``, and the
opaque cursors of paginated lists.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ._registry import JSONDict
from ._wire import RpcError, as_dict, as_list

__all__ = [
    "decode_cursor",
    "encode_cursor",
    "prompt_result",
    "read_result",
    "text_block",
    "tool_result",
]


def text_block(text: str) -> JSONDict:
    """A text content block."""
    return {"type": "text", "text": text}


def tool_result(value: Any) -> JSONDict:
    """Turn what a tool function returned into a ``CallToolResult`` body."""
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [text_block(value)]}
    items = as_list(value)
    if items is not None:
        return {"content": list(items)}
    mapping = as_dict(value)
    if mapping is not None:
        if "content" in mapping:
            return dict(mapping)
        return {"content": [text_block(json.dumps(mapping))], "structuredContent": dict(mapping)}
    return {"content": [text_block(str(value))]}


def prompt_result(value: Any) -> JSONDict:
    """Turn static prompt messages or a handler's return value into a ``GetPromptResult``."""
    if isinstance(value, str):
        return {"messages": [{"role": "user", "content": text_block(value)}]}
    mapping = as_dict(value)
    if mapping is not None:
        if "messages" in mapping:
            return dict(mapping)
        return {"messages": [dict(mapping)]}
    items = as_list(value)
    if items is not None:
        messages: list[Any] = []
        for item in items:
            if isinstance(item, str):
                messages.append({"role": "user", "content": text_block(item)})
            else:
                messages.append(item)
        return {"messages": messages}
    raise TypeError(f"a prompt handler returned {type(value).__name__}, not messages")


def read_result(uri: str, value: Any, mime_type: str | None) -> JSONDict:
    """Turn a template handler's return value into a ``ReadResourceResult``."""
    if isinstance(value, (str, bytes)):
        contents: JSONDict = {"uri": uri}
        if mime_type is not None:
            contents["mimeType"] = mime_type
        if isinstance(value, bytes):
            contents["blob"] = base64.b64encode(value).decode("ascii")
        else:
            contents["text"] = value
        return {"contents": [contents]}
    mapping = as_dict(value)
    if mapping is not None:
        if "contents" in mapping:
            return dict(mapping)
        return {"contents": [dict(mapping)]}
    items = as_list(value)
    if items is not None:
        return {"contents": list(items)}
    raise TypeError(f"a resource template handler returned {type(value).__name__}")


def encode_cursor(kind: str, offset: int) -> str:
    """The cursor of the page of list ``kind`` that starts at ``offset``."""
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def decode_cursor(kind: str, cursor: Any) -> int:
    """The offset a cursor of list ``kind`` stands for (``-32602`` when it is not one)."""
    if not isinstance(cursor, str):
        raise RpcError(-32602, "Invalid cursor")
    try:
        decoded = base64.urlsafe_b64decode(cursor.encode("ascii")).decode()
        prefix, _, offset = decoded.partition(":")
        if prefix != kind:
            raise ValueError(prefix)
        return int(offset)
    except (ValueError, UnicodeError) as exc:
        raise RpcError(-32602, "Invalid cursor") from exc

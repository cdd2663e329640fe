"""The request handlers of each area: tools, prompts, resources, completion, and lists.

One job: given what the server has registered (its ``ServerState``) and the request's
params, produce the result body (or raise ``RpcError``): paginated lists, ``tools/call``
with its argument checks, ``prompts/get``, ``resources/read`` (static resources, then
templates) and ``completion/complete``. Era-specific decoration and sending are the
connection's.
"""

from __future__ import annotations

from ._context import ToolContext
from ._registry import JSONDict, ServerState, match_uri_template
from ._results import (
    decode_cursor,
    encode_cursor,
    prompt_result,
    read_result,
    tool_result,
)
from ._wire import RpcError, as_dict, as_list, maybe_await

__all__ = ["LIST_KEYS", "call_tool", "execute", "list_page"]

LIST_KEYS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
"""The list methods and the key of their result that holds the items."""


def list_page(state: ServerState, page_size: int | None, method: str, params: JSONDict) -> JSONDict:
    """One page of a list method (``tools/list``, ``resources/templates/list``, ...)."""
    key = LIST_KEYS[method]
    if method == "tools/list":
        items = [entry.definition for entry in state.tools.values()]
    elif method == "prompts/list":
        items = [entry.definition for entry in state.prompts.values()]
    elif method == "resources/list":
        items = [entry.definition for entry in state.resources.values()]
    else:
        items = [entry.definition for entry in state.templates.values()]
    start = 0
    cursor = params.get("cursor")
    if cursor is not None:
        start = decode_cursor(key, cursor)
        if start > len(items):
            raise RpcError(-32602, "Invalid cursor")
    end = len(items) if page_size is None else start + max(1, page_size)
    result: JSONDict = {key: [dict(item) for item in items[start:end]]}
    if end < len(items):
        result["nextCursor"] = encode_cursor(key, end)
    return result


async def execute(state: ServerState, ctx: ToolContext, method: str, params: JSONDict) -> JSONDict:
    """Run the handler a ``tools/call``, ``prompts/get``, ``resources/read`` or
    ``completion/complete`` names and return its result body."""
    if method == "tools/call":
        return await call_tool(state, ctx, params)
    if method == "prompts/get":
        return await _get_prompt(state, ctx, params)
    if method == "resources/read":
        return await _read_resource(state, ctx, params)
    return await _complete_argument(state, params)


async def call_tool(state: ServerState, ctx: ToolContext, params: JSONDict) -> JSONDict:
    """``tools/call``: check the arguments against the tool's schema, run it, shape its result."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(-32602, "Invalid params: tools/call needs a tool name")
    entry = state.tools.get(name)
    if entry is None:
        raise RpcError(-32602, f"Unknown tool: {name}")
    raw = params.get("arguments")
    arguments = {} if raw is None else as_dict(raw)
    if arguments is None:
        raise RpcError(-32602, f"Invalid arguments for tool {name}: expected an object")
    for required in entry.required:
        if required not in arguments:
            raise RpcError(
                -32602,
                f"Invalid arguments for tool {name}: Missing required property '{required}'",
            )
    if entry.accepted is not None:
        for argument in arguments:
            if argument not in entry.accepted:
                raise RpcError(
                    -32602,
                    f"Invalid arguments for tool {name}: Unexpected property '{argument}'",
                )
    value = await maybe_await(entry.function(ctx, **arguments))
    return tool_result(value)


async def _get_prompt(state: ServerState, ctx: ToolContext, params: JSONDict) -> JSONDict:
    """``prompts/get``: the static messages, or what the prompt's handler returns."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(-32602, "Invalid params: prompts/get needs a prompt name")
    entry = state.prompts.get(name)
    if entry is None:
        raise RpcError(-32602, f"Unknown prompt: {name}")
    raw = params.get("arguments")
    arguments = {} if raw is None else as_dict(raw)
    if arguments is None:
        raise RpcError(-32602, f"Invalid arguments for prompt {name}: expected an object")
    for required in entry.required:
        if required not in arguments:
            raise RpcError(
                -32602, f"Invalid arguments for prompt {name}: Missing argument '{required}'"
            )
    if entry.handler is None:
        result = prompt_result(entry.messages)
    else:
        result = prompt_result(await maybe_await(entry.handler(ctx, **arguments)))
    description = entry.definition.get("description")
    if description is not None and "description" not in result:
        result["description"] = description
    return result


async def _read_resource(state: ServerState, ctx: ToolContext, params: JSONDict) -> JSONDict:
    """``resources/read``: a static resource, else the first template whose pattern matches."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(-32602, "Invalid params: resources/read needs a uri")
    resource = state.resources.get(uri)
    if resource is not None:
        return {"contents": [dict(resource.contents)]}
    for template in state.templates.values():
        if template.handler is None:
            continue
        variables = match_uri_template(template.pattern, uri)
        if variables is not None:
            value = await maybe_await(template.handler(ctx, uri, **variables))
            mime_type = template.definition.get("mimeType")
            return read_result(uri, value, mime_type if isinstance(mime_type, str) else None)
    code = -32602 if ctx.era == "modern" else -32002
    raise RpcError(code, "Resource not found", {"uri": uri})


async def _complete_argument(state: ServerState, params: JSONDict) -> JSONDict:
    """``completion/complete``: what the completion handler returns, at most 100 values."""
    handler = state.completion
    if handler is None:
        raise RpcError(-32601, "Method not found: completion/complete (no completions)")
    ref = as_dict(params.get("ref"))
    argument = as_dict(params.get("argument"))
    if ref is None or argument is None:
        raise RpcError(-32602, "Invalid params: completion/complete needs ref and argument")
    value = await maybe_await(handler(ref, argument, as_dict(params.get("context"))))
    items = as_list(value)
    if items is not None:
        values = [str(v) for v in items]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }
    mapping = as_dict(value)
    if mapping is None:
        raise TypeError("a completion handler must return a list of strings or a dict")
    return dict(mapping) if "completion" in mapping else {"completion": dict(mapping)}

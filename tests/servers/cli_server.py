"""A stdio server for the trio-mcp command's tests: the demo server plus tools that fail,
ask for a form with choices and defaults, ask to open a URL, ask for a model reply, and
return an image. ``TRIO_MCP_CLI_MARKER`` (a file) is touched when the server starts."""

from __future__ import annotations

import os
import sys
from typing import Any

import trio

from trio_mcp import ToolError
from trio_mcp.testing import ToolContext
from trio_mcp.testing._demo import demo_server


def build(eras: Any = "both") -> Any:
    server = demo_server(eras)

    @server.tool(description="Always fails (an isError result).")
    async def fail(ctx: ToolContext, reason: str = "it broke") -> str:
        del ctx
        raise ToolError(reason)

    @server.tool(description="A form with choices, a default and a number.")
    async def order(ctx: ToolContext) -> str:
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": "Your order?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "string", "enum": ["small", "large"], "title": "Size"},
                        "count": {"type": "integer", "minimum": 1, "maximum": 5, "title": "Count"},
                        "note": {"type": "string", "default": "none", "title": "Note"},
                    },
                    "required": ["size", "count"],
                },
            }
        )
        if answer.get("action") != "accept":
            return f"action: {answer.get('action')}"
        content: Any = answer.get("content") or {}
        return f"order: {content['count']} x {content['size']} ({content.get('note')})"

    @server.tool(description="Asks the user to open a URL.")
    async def visit(ctx: ToolContext, url: str = "https://example.com/login") -> str:
        answer = await ctx.elicit(
            {
                "mode": "url",
                "message": "Please log in.",
                "url": url,
                "elicitationId": "e-1",
            }
        )
        return f"action: {answer.get('action')}"

    @server.tool(description="Asks the client's model (sampling).")
    async def ask_model(ctx: ToolContext, question: str = "What is 2+2?") -> str:
        answer = await ctx.sample(
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
                "maxTokens": 50,
            }
        )
        content: Any = answer.get("content") or {}
        return f"model said: {content.get('text')}"

    @server.tool(description="Returns an image.")
    async def picture(ctx: ToolContext) -> list[Any]:
        del ctx
        return [
            {"type": "text", "text": "a pixel"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ]

    return server


def main() -> None:
    marker = os.environ.get("TRIO_MCP_CLI_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
    eras = sys.argv[1] if len(sys.argv) > 1 else "both"
    trio.run(build(eras).serve_stdio)


if __name__ == "__main__":
    main()

"""The demo server behind ``python -m trio_mcp.testing``: a little of everything."""

from __future__ import annotations

from typing import Any

import trio

from ._context import ToolContext
from ._server import MockServer
from ._server_base import Eras
from ._wire import ServerCrash

__all__ = ["demo_server"]


def demo_server(eras: Eras = "both") -> MockServer:
    """Build the demo server: a few tools, a resource, a template, a prompt, completions.

    Tools: ``echo(text)``, ``add(a, b)`` (structured result), ``slow(seconds, steps)``
    (progress notifications, sleeps on trio's clock), ``ask_name()`` (elicitation; a
    legacy request or a modern ``input_required`` round), ``log(level, message)``
    and ``crash()`` (the server dies abruptly). Resource ``demo://readme``; template
    ``demo://items/{item_id}``; prompt ``greeting(name)``; completion of ``name``.

    Args:
        eras: Which protocol eras to serve: ``"both"``, ``"legacy"`` or ``"modern"``.

    Returns:
        A fresh [`MockServer`][trio_mcp.testing.MockServer].
    """
    server = MockServer(
        name="trio-mcp-demo",
        version="1.0.0",
        eras=eras,
        instructions="A demo MCP server bundled with trio_mcp, for tests and examples.",
    )

    @server.tool(description="Echo the text back.")
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return text

    @server.tool(description="Add two numbers.")
    async def add(ctx: ToolContext, a: float, b: float) -> dict[str, Any]:
        del ctx
        total = a + b
        return {
            "content": [{"type": "text", "text": repr(total)}],
            "structuredContent": {"sum": total},
        }

    @server.tool(description="Sleep in steps, reporting progress after each one.")
    async def slow(ctx: ToolContext, seconds: float = 1.0, steps: int = 4) -> str:
        steps = max(1, steps)
        for step in range(1, steps + 1):
            await trio.sleep(seconds / steps)
            await ctx.progress(step, steps, f"step {step} of {steps}")
        return f"slept {seconds} seconds"

    @server.tool(description="Ask the user for their name, then greet them.")
    async def ask_name(ctx: ToolContext) -> str:
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            }
        )
        if answer.get("action") != "accept":
            return "No name given."
        content: Any = answer.get("content") or {}
        return f"Hello, {content.get('name', 'stranger')}!"

    @server.tool(description="Send a log message at the given level.")
    async def log(ctx: ToolContext, level: str, message: str) -> str:
        await ctx.log(level, message, logger="demo")
        return "logged"

    @server.tool(description="Make the server die abruptly (for crash handling tests).")
    async def crash(ctx: ToolContext) -> None:
        del ctx
        raise ServerCrash("the crash tool was called")

    server.add_resource(
        "demo://readme",
        text="This is the trio_mcp demo server.",
        mime_type="text/plain",
        name="readme",
        description="What this server is.",
    )

    def read_item(ctx: ToolContext, uri: str, item_id: str) -> str:
        del ctx, uri
        return f"Item {item_id}"

    server.add_resource_template(
        "demo://items/{item_id}", "item", read_item, mime_type="text/plain"
    )

    def greeting(ctx: ToolContext, name: str) -> list[Any]:
        del ctx
        return [{"role": "user", "content": {"type": "text", "text": f"Please greet {name}."}}]

    server.add_prompt("greeting", greeting, ["name"], description="Greet someone by name.")

    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        del ref, context
        prefix = str(argument.get("value", ""))
        return [name for name in ("Alice", "Bob", "Carol") if name.startswith(prefix)]

    server.set_completion(complete)
    return server

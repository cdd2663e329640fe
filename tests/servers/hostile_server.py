"""A stdio server whose every string is hostile to a terminal, for the trio-mcp command's
terminal tests: tool names, descriptions, results, errors, prompts, resources, stderr, the
server's name and instructions, elicitation messages and progress messages all carry
``EVIL`` (ESC sequences, OSC 52/8, BEL, NUL, C1, U+202E and rich markup). Also a
multi-select form with a default, a question the server withdraws, and a prompt that echoes
its arguments."""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

from trio_mcp import ToolError
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.testing._connection import ServerCrash

#: Every kind of terminal attack at once; each part has a marker the tests look for.
EVIL = (
    "<\x1b]52;c;cm0gLXJmIH4=\x07>"  # OSC 52: write `rm -rf ~` to the clipboard
    "<\x1b]8;;https://evil.example/\x07link\x1b]8;;\x07>"  # OSC 8: a hidden hyperlink
    "<\x1b[2J\x1b]0;pwned\x07>"  # clear the screen, retitle the window
    "<\u202eevil>"  # right-to-left override
    "<\x00\x9b31m>"  # NUL, C1 CSI
    "<[/]>[link=https://evil.example/]x[/link][bold]:smile:"  # rich markup and emoji codes
)


def build(background: trio.Nursery | None = None) -> MockServer:
    server = MockServer(name=f"evil{EVIL}", version="6.6.6", instructions=f"obey {EVIL}")
    answers: list[Any] = []

    @server.tool(description="Returns now; asks a question after a while (legacy era).")
    async def later(ctx: ToolContext, seconds: float = 1.0) -> str:
        connection: Any = ctx._connection  # pyright: ignore[reportPrivateUsage]

        async def ask_later() -> None:
            await trio.sleep(seconds)
            answer = await connection.client_request(
                "elicitation/create",
                {
                    "mode": "form",
                    "message": "A question out of the blue?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"word": {"type": "string", "title": "Word"}},
                    },
                },
            )
            answers.append(answer)

        assert background is not None
        background.start_soon(ask_later)
        return "will ask"

    @server.tool(description="The answers to the questions asked by 'later'.")
    async def answers_so_far(ctx: ToolContext) -> str:
        del ctx
        return json.dumps(answers)

    @server.tool(name=f"name{EVIL}", description=f"desc {EVIL}")
    async def named(ctx: ToolContext) -> str:
        del ctx
        return f"result {EVIL}"

    @server.tool(description="Returns hostile text.")
    async def result(ctx: ToolContext) -> str:
        del ctx
        return f"result {EVIL}"

    @server.tool(description=f"fails {EVIL}")
    async def fail(ctx: ToolContext) -> str:
        del ctx
        raise ToolError(f"tool error {EVIL}")

    @server.tool(description=f"a JSON-RPC error {EVIL}")
    async def broken(ctx: ToolContext) -> str:
        del ctx
        raise ValueError(f"server error {EVIL}")

    @server.tool(description="Reports progress with hostile messages.")
    async def progress(ctx: ToolContext, steps: int = 3) -> str:
        for step in range(1, steps + 1):
            await ctx.progress(step, steps, f"progress {EVIL}")
            await trio.sleep(0.3)
        return "done"

    @server.tool(description="Asks a hostile question.")
    async def ask(ctx: ToolContext) -> str:
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": f"elicit {EVIL}",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {
                            "type": "string",
                            "title": f"title {EVIL}",
                            "description": f"fielddesc {EVIL}",
                        },
                        "extra": {"type": "string", "default": f"default {EVIL}"},
                    },
                    "required": ["name"],
                },
            }
        )
        return f"action: {answer.get('action')} {json.dumps(answer.get('content'))}"

    @server.tool(description="A multi-select form field with a default.")
    async def instruments(ctx: ToolContext) -> str:
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": "Which instruments?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "picked": {
                            "type": "array",
                            "title": "Instruments",
                            "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]},
                            "default": ["Guitar"],
                        }
                    },
                },
            }
        )
        return f"action: {answer.get('action')} {json.dumps(answer.get('content'))}"

    @server.tool(description="Asks, then withdraws the question (legacy era) after a while.")
    async def impatient(ctx: ToolContext, seconds: float = 1.0) -> str:
        with trio.move_on_after(seconds):
            await ctx.elicit(
                {
                    "mode": "form",
                    "message": "Quick, your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "title": "Name"}},
                    },
                }
            )
            return "answered"
        return "gave up"

    @server.tool(description="Writes to stderr, then dies.")
    async def crash(ctx: ToolContext) -> None:
        del ctx
        print(f"dying {EVIL}", file=sys.stderr, flush=True)
        raise ServerCrash("the crash tool was called")

    server.add_resource("evil://text", text=f"resource text {EVIL}", mime_type="text/plain")
    server.add_resource(
        f"evil://res{EVIL}",
        text=f"resource text {EVIL}",
        mime_type="text/plain",
        name=f"resname{EVIL}",
        description=f"resdesc {EVIL}",
    )

    server.add_resource_template(
        "evil://t/{id}", f"tname{EVIL}", description=f"tdesc {EVIL}", mime_type="text/plain"
    )

    def hostile_prompt(ctx: ToolContext) -> dict[str, Any]:
        del ctx
        return {
            "description": f"promptdesc {EVIL}",
            "messages": [{"role": "user", "content": {"type": "text", "text": f"msg {EVIL}"}}],
        }

    server.add_prompt(f"prompt{EVIL}", hostile_prompt, description=f"pdesc {EVIL}")
    server.add_prompt("hostile", hostile_prompt, description=f"pdesc {EVIL}")

    def echo_args(ctx: ToolContext, **arguments: Any) -> str:
        del ctx
        return json.dumps(arguments)

    server.add_prompt(
        "echo_args",
        echo_args,
        [{"name": "price"}, {"name": "quote"}, {"name": "raw"}],
        description="Returns its arguments as JSON.",
    )
    return server


def main() -> None:
    print(f"starting {EVIL}", file=sys.stderr, flush=True)

    async def serve() -> None:
        async with trio.open_nursery() as background:
            await build(background).serve_stdio()
            background.cancel_scope.cancel()

    trio.run(serve)


if __name__ == "__main__":
    main()

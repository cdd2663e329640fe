"""The CLI test server plus a tool whose input schema uses ``$ref``, ``$defs``,
``definitions`` and a cyclic reference (for ``tests/test_cli_features.py``)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cli_server import build

PLOT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
        },
        "Color": {"enum": ["red", "green"]},
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
    },
    "definitions": {"Count": {"type": "integer", "minimum": 1}},
    "properties": {
        "at": {"$ref": "#/$defs/Point", "description": "where"},
        "color": {"$ref": "#/$defs/Color"},
        "count": {"allOf": [{"$ref": "#/definitions/Count"}]},
        "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "chain": {"$ref": "#/$defs/Node"},
    },
    "required": ["at"],
}


def main() -> None:
    marker = os.environ.get("TRIO_MCP_CLI_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
    server = build(sys.argv[1] if len(sys.argv) > 1 else "both")

    @server.tool(description="Plot a point.", input_schema=PLOT_SCHEMA)
    async def plot(ctx: Any, **arguments: Any) -> str:
        del ctx
        return json.dumps(arguments, sort_keys=True)

    @server.tool(description="Greets someone.", input_schema=_greet_schema("integer"))
    async def greet(ctx: Any, who: Any) -> str:
        del ctx
        return f"hello {who}"

    @server.tool(description="Changes greet's schema without telling anyone.")
    async def upgrade(ctx: Any) -> str:
        del ctx
        server.remove_tool("greet")
        server.tool(name="greet", description="Greets.", input_schema=_greet_schema("string"))(
            greet
        )
        return "upgraded"

    trio.run(server.serve_stdio)


def _greet_schema(kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"who": {"type": kind}}, "required": ["who"]}


if __name__ == "__main__":
    main()

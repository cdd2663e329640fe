"""The user's conftest: serve their own tools by overriding the plugin's mcp_server fixture."""

from __future__ import annotations

import pytest
import trio

from trio_mcp.testing import MockServer, ToolContext


@pytest.fixture
def mcp_server(mcp_era: str) -> MockServer:
    server = MockServer(name="weather", version="2.0")

    @server.tool(description="Waits for an event nobody sets")
    async def stuck(ctx: ToolContext) -> str:
        await trio.Event().wait()
        return "never"

    @server.tool(description="Echo the text back")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool(description="Forecast for a city; slow, reports progress")
    async def forecast(ctx: ToolContext, city: str, days: int = 3) -> str:
        for day in range(1, days + 1):
            await trio.sleep(10)  # trio's clock: instant under mcp_clock
            await ctx.progress(day, days, f"day {day}")
        return f"{city}: sunny for {days} days"

    return server

"""A fastmcp server whose tools run as SEP-2663 tasks (``io.modelcontextprotocol/tasks``).

Runs in its own virtualenv (``.peers/py-fastmcp/``, made by ``scripts/install-peers.sh``)
with fastmcp and ``fastmcp-tasks``; stdio, protocol 2026-07-28. The task backend is
pydocket's ``memory://`` (in-process), so no Redis server is needed.

Tools (each a task when the client opts in to the extension):

* ``crunch(n)``: finishes after 0.3 s with ``"crunched <n>"``.
* ``ask()``: asks for a format through an ``elicitation/create`` input request (the
  guard pattern: the first run returns ``InputRequiredResult``, the task re-runs with the
  client's answer from ``tasks/update``) and returns ``"format <answer>"``.
* ``explode()``: fails with JSON-RPC error ``-32099`` (the task ends ``failed``).
* ``slow()``: sleeps ten minutes; notes ``slow started`` / ``slow cancelled`` in the
  methods log (env ``TRIO_MCP_METHODS_LOG``) so a test sees ``tasks/cancel`` reach the
  worker.
* ``only_task()``: ``required`` task mode (the server refuses a client without the
  extension, ``-32021``).

Every task tool suggests polling every 200 ms (``pollIntervalMs``).
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

POLL = timedelta(milliseconds=200)
TASK = TaskConfig(mode="optional", poll_interval=POLL)

mcp = FastMCP("trio-mcp-tasks-peer")
mcp.add_extension(TasksExtension(url="memory://"))


def note(line: str) -> None:
    log = os.environ.get("TRIO_MCP_METHODS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(line + "\n")


@mcp.tool(task=TASK)
async def crunch(n: int) -> str:
    await asyncio.sleep(0.3)
    return f"crunched {n}"


@mcp.tool(task=TASK)
async def ask(ctx: Context) -> Any:
    answers = ctx.input_responses
    if not answers:
        schema = {
            "type": "object",
            "properties": {"format": {"type": "string"}},
            "required": ["format"],
        }
        form = mcp_types.ElicitRequestFormParams(message="Format?", requested_schema=schema)
        return mcp_types.InputRequiredResult(
            input_requests={"fmt": mcp_types.ElicitRequest(params=form)}
        )
    answer = answers["fmt"]
    content = getattr(answer, "content", None) or {}
    return f"format {content.get('format')}"


@mcp.tool(task=TASK)
async def explode() -> str:
    raise MCPError(code=-32099, message="the render farm is on fire")


@mcp.tool(task=TASK)
async def slow() -> str:
    note("slow started")
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        note("slow cancelled")
        raise
    return "never"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def only_task() -> str:
    return "ran as a task"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)

"""An extension's notifications reach typed callbacks: ``ClientSession.on_notification``.

The server sends them with ``ToolContext.notify`` (MockServer), in both eras.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

import msgspec
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext

ALERT = "notifications/com.example/alert"


class Alert(msgspec.Struct, kw_only=True):
    level: str
    text: str


@dataclasses.dataclass
class Plain:
    text: str


def alerting_server() -> MockServer:
    server = MockServer()

    @server.tool
    async def alert(ctx: ToolContext) -> str:
        await ctx.notify(ALERT, {"level": "high", "text": "disk full", "newField": 1})
        await ctx.notify(ALERT, {"level": 3})  # malformed for Alert
        await ctx.notify(ALERT)  # no params at all
        return "sent"

    return server


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_extension_notifications_reach_typed_and_raw_callbacks(
    protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    typed: list[Alert] = []
    plain: list[Plain] = []
    raw: list[dict[str, object]] = []
    server = alerting_server()
    with caplog.at_level(logging.DEBUG, logger="trio_mcp"):
        async with trio_mcp.open_mcp_session(server, protocol=protocol) as session:
            session.on_notification(ALERT, Alert, typed.append)
            remove = session.on_notification(ALERT, Plain, plain.append)
            session.add_notification_handler(ALERT, lambda note: raw.append(note.params))
            await session.call_tool("alert", {})
            await trio.testing.wait_all_tasks_blocked()
            remove()
            await session.call_tool("alert", {})
            await trio.testing.wait_all_tasks_blocked()
    assert typed == [Alert(level="high", text="disk full")] * 2
    assert plain == [Plain(text="disk full")]
    assert len(raw) == 6 and raw[1] == {"level": 3}
    assert f"dropping a malformed {ALERT}" in caplog.text


async def test_a_type_msgspec_cannot_decode_is_refused_at_once() -> None:
    async with trio_mcp.open_mcp_session(MockServer()) as session:
        with pytest.raises(TypeError, match="cannot decode to"):
            session.on_notification(ALERT, threading.Lock, print)

"""Regression tests for library bugs found by running the MCP conformance client scenarios."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp._eras import ProbeVerdict, classify_probe
from trio_mcp._transports._memory import memory_transport_pair

from .rawpeer import RawPeer

MODERN = "2026-07-28"


@asynccontextmanager
async def connect(
    options: dict[str, Any] | None = None, **handlers: Any
) -> AsyncGenerator[tuple[trio_mcp.ClientSession, RawPeer], None]:
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, **(options or {})) as session:
            yield session, peer
        await server.aclose()
        nursery.cancel_scope.cancel()


async def empty_result(peer: RawPeer, message: dict[str, Any]) -> Any:
    """What the conformance suite's legacy mocks (initialize, sse-retry) answer to any method."""
    return {}


async def test_probe_answered_with_a_non_discover_result_falls_back_to_legacy() -> None:
    # Scenarios `initialize` and `sse-retry` in auto mode: server/discover got `{"result": {}}`
    # and open_mcp_session failed with ProtocolError instead of falling back to initialize.
    async with connect(server__discover=empty_result) as (session, peer):
        assert session.era == "legacy"
        assert session.protocol_version == "2025-11-25"
        assert len(peer.sent("server/discover")) == 1
        assert len(peer.sent("initialize")) == 1
        while not peer.sent("notifications/initialized"):
            await peer.got_message.wait()


async def test_pinned_modern_still_rejects_a_non_discover_result() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server, server__discover=empty_result)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        with pytest.raises(trio_mcp.ProtocolError, match="server/discover"):
            async with trio_mcp.open_mcp_session(nursery, client, protocol=MODERN):
                pass  # pragma: no cover
        assert not peer.sent("initialize")
        nursery.cancel_scope.cancel()


def test_classify_probe_treats_a_protocol_error_as_legacy() -> None:
    verdict = classify_probe(None, trio_mcp.ProtocolError("invalid result for server/discover"))
    assert verdict.kind is ProbeVerdict.LEGACY

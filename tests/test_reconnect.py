"""The pieces HTTP+SSE and WebSocket share to reconnect (``_transports/_reconnect.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trio_mcp._transports import _reconnect
from trio_mcp._transports._jsonpeek import routed
from trio_mcp._transports._reconnect import Outstanding, refusal


def test_outstanding_remembers_until_answered_and_is_bounded() -> None:
    ids = Outstanding()
    ids.add(1)
    ids.add("a")
    ids.discard(1)
    ids.discard(None)
    ids.discard(99)
    assert ids.take() == ["a"]
    assert len(ids) == 0
    for n in range(_reconnect._OUTSTANDING_LIMIT + 10):  # pyright: ignore[reportPrivateUsage]
        ids.add(n)
    assert len(ids) == _reconnect._OUTSTANDING_LIMIT  # pyright: ignore[reportPrivateUsage]
    assert ids.take()[0] == 10  # the oldest were forgotten


def test_refusal() -> None:
    accepted = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}'
    assert refusal(accepted, routed(accepted)[0]) is None
    refused = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}'
    assert refusal(refused, routed(refused)[0]) == refused.decode()
    assert refusal(b"\xff" * 400, None) == "\ufffd" * 300  # undecodable: refused, cut


@given(st.binary(max_size=500))
def test_refusal_of_any_answer_never_raises(data: bytes) -> None:
    reason = refusal(data, routed(data)[0])
    assert reason is None or len(reason) <= 300

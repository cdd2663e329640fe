"""OpenTelemetry client spans: W3C trace context travels in ``_meta`` (SEP-414)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import trio_mcp
from trio_mcp.testing import MockServer

trace = pytest.importorskip("opentelemetry.trace")

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331


def parent() -> object:
    context = trace.SpanContext(TRACE_ID, SPAN_ID, is_remote=False, trace_flags=trace.TraceFlags(1))
    return trace.NonRecordingSpan(context)


@pytest.mark.parametrize("eras", ["modern", "legacy"])
async def test_trace_context_rides_in_meta(eras: str) -> None:
    server = MockServer(eras=eras)

    @server.tool
    async def echo(ctx: object, text: str) -> str:
        return text

    async with trio_mcp.open_mcp_session(server) as session:
        await session.list_tools()
        with trace.use_span(parent()):  # type: ignore[arg-type]
            await session.call_tool("echo", {"text": "hi"})
    calls = [m for m in server.received if m.get("method") == "tools/call"]
    meta = calls[0]["params"]["_meta"]
    assert meta["traceparent"] == f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01"
    listing = next(m for m in server.received if m.get("method") == "tools/list")
    assert "traceparent" not in (listing.get("params") or {}).get("_meta", {})


def test_import_does_not_load_opentelemetry() -> None:
    code = "import sys, trio_mcp; print('opentelemetry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_requests_do_not_import_opentelemetry_for_an_application_that_never_did() -> None:
    """No span can be current and no provider set before the application imports the API.

    So a first request costs no import (about 10 ms with the API installed), and tracing
    starts as soon as the application uses OpenTelemetry, even in a session already open.
    """
    code = (
        "import sys, trio, trio_mcp\n"
        "from trio_mcp.testing import MockServer\n"
        "server = MockServer()\n"
        "@server.tool\n"
        "async def echo(ctx: object, text: str) -> str:\n"
        "    return text\n"
        "async def main() -> None:\n"
        "    async with trio_mcp.open_mcp_session(server) as session:\n"
        "        await session.call_tool('echo', {'text': 'hi'})\n"
        "        print('opentelemetry' in sys.modules)\n"
        "        from opentelemetry import trace\n"
        "        span = trace.NonRecordingSpan(trace.SpanContext(\n"
        f"            {TRACE_ID}, {SPAN_ID}, is_remote=False, trace_flags=trace.TraceFlags(1)))\n"
        "        with trace.use_span(span):\n"
        "            await session.call_tool('echo', {'text': 'hi'})\n"
        "    calls = [m for m in server.received if m.get('method') == 'tools/call']\n"
        "    print([('traceparent' in (m['params'].get('_meta') or {})) for m in calls])\n"
        "trio.run(main)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OTEL_PYTHON_TRACER_PROVIDER"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["False", "[False,", "True]"]


async def test_no_provider_and_no_span_means_no_tracing_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With only the API installed and nothing to propagate, requests skip tracing entirely."""
    from trio_mcp import _tracing

    def refuse(*args: object) -> object:
        raise AssertionError("traced() was entered")

    monkeypatch.setattr(_tracing, "traced", refuse)
    server = MockServer()

    @server.tool
    async def echo(ctx: object, text: str) -> str:
        return text

    assert not _tracing.active()
    async with trio_mcp.open_mcp_session(server) as session:
        await session.call_tool("echo", {"text": "hi"})
        with trace.use_span(parent()):  # type: ignore[arg-type]
            assert _tracing.active()
    call = next(m for m in server.received if m.get("method") == "tools/call")
    assert "traceparent" not in (call.get("params") or {}).get("_meta", {})


def test_a_configured_provider_turns_tracing_on() -> None:
    """Setting a tracer provider (in a fresh process: it can be set once) activates tracing."""
    code = (
        "from opentelemetry import trace\n"
        "from trio_mcp import _tracing\n"
        "assert not _tracing.active()\n"
        "trace.set_tracer_provider(trace.NoOpTracerProvider())\n"
        "assert _tracing.active()\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    env_code = "from trio_mcp import _tracing\nassert _tracing.active()\nprint('ok')\n"
    env = {**os.environ, "OTEL_PYTHON_TRACER_PROVIDER": "default_tracer_provider"}
    out = subprocess.run(
        [sys.executable, "-c", env_code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "ok"

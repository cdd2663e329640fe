"""OpenTelemetry client spans with W3C trace context in ``_meta`` (SEP-414).

Active only when ``opentelemetry-api`` is installed (the ``otel`` extra) and in use: trio_mcp
never imports it itself until the application has (a span can be current, or a provider
set, only through the API's modules) or ``OTEL_PYTHON_TRACER_PROVIDER`` names a provider;
so neither ``import trio_mcp`` nor a first request pays for its import. A request is traced
only when there is something to record or propagate (`active()`): a tracer provider was
configured (an OpenTelemetry SDK), or the caller runs inside a valid span context (e.g. one
extracted from an incoming request). Otherwise the session skips this module entirely: no
span, no context manager, nothing on the wire.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["active", "traced"]


@functools.cache
def _otel() -> tuple[Any, Any, Callable[[], Mapping[str, object]]] | None:
    try:
        from opentelemetry import context, propagate, trace
    except ImportError:
        return None
    return trace, propagate, context.get_current


@functools.cache
def _provider_check() -> Callable[[], bool]:
    """How to tell, cheaply, whether a tracer provider has been configured.

    ``trace.get_tracer_provider()`` reads the environment on every call while none is set;
    the API keeps the configured provider in a module global, read directly when it exists
    (the environment variable is read once). Otherwise the public call is used.
    """
    otel = _otel()
    assert otel is not None
    trace = otel[0]
    if hasattr(trace, "_TRACER_PROVIDER"):
        from_env = _provider_from_env()
        return lambda: from_env or getattr(trace, "_TRACER_PROVIDER", None) is not None
    proxy = trace.ProxyTracerProvider
    return lambda: not isinstance(trace.get_tracer_provider(), proxy)


@functools.cache
def _provider_from_env() -> bool:
    return bool(os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"))


def active() -> bool:
    """Whether a request made now should be traced (see the module docstring)."""
    if "opentelemetry.trace" not in sys.modules and not _provider_from_env():
        return False  # the application has not used the tracing API: nothing to trace
    otel = _otel()
    if otel is None:
        return False
    # (an empty context, the common case, holds no span: one call instead of five)
    if otel[2]() and otel[0].get_current_span().get_span_context().is_valid:
        return True  # inside a span: its context travels on
    return _provider_check()()  # an SDK (or another provider) was configured


@contextmanager
def traced(
    method: str, name: str | None, params: Mapping[str, Any] | None
) -> Generator[Mapping[str, Any] | None, None, None]:
    """A CLIENT span around one logical request; yields params carrying the trace context.

    The ``traceparent`` (and ``tracestate``, baggage) go into ``params["_meta"]``, as
    SEP-414 describes; params are returned unchanged when there is nothing to propagate.
    """
    otel = _otel()
    if otel is None:
        yield params
        return
    trace, propagate, _ = otel
    tracer = trace.get_tracer("trio_mcp")
    span_name = f"{method} {name}" if name else method
    attributes: dict[str, str] = {"rpc.system": "mcp", "mcp.method.name": method}
    if name:
        attributes["mcp.request.target"] = name
    with tracer.start_as_current_span(span_name, kind=trace.SpanKind.CLIENT, attributes=attributes):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        if not carrier:
            yield params
            return
        merged: dict[str, Any] = dict(params) if params else {}
        given: object = merged.get("_meta")
        meta: dict[str, Any] = dict(given) if isinstance(given, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
        merged["_meta"] = {**meta, **carrier}
        yield merged

"""Answering the server's requests: sampling, elicitation and roots handlers.

A handler is an async function of the request's typed params and a
[`RequestContext`][trio_mcp.handlers.RequestContext] (``sampling=``, ``elicitation=``, ``roots=`` of
``open_mcp_session``); the aliases [`SamplingHandler`][trio_mcp.handlers.SamplingHandler],
[`ElicitationHandler`][trio_mcp.handlers.ElicitationHandler] and
[`RootsHandler`][trio_mcp.handlers.RootsHandler] spell their types.
[`Roots`][trio_mcp.handlers.Roots] is a set of roots that may change; raise
[`HandlerError`][trio_mcp.handlers.HandlerError] to answer with a JSON-RPC error. An elicitation
answer that does not match the form's schema raises
[`ElicitationContentError`][trio_mcp.handlers.ElicitationContentError]. ``RequestContext``,
``Roots`` and ``HandlerError`` are re-exported from ``trio_mcp`` too.
"""

from __future__ import annotations

from ._exceptions import ElicitationContentError as ElicitationContentError
from ._handlers import HandlerError as HandlerError
from ._handlers import Roots as Roots
from ._public import publish as _publish
from ._session import ElicitationHandler as ElicitationHandler
from ._session import RequestContext as RequestContext
from ._session import RootsHandler as RootsHandler
from ._session import SamplingHandler as SamplingHandler

__all__ = [
    "ElicitationContentError",
    "ElicitationHandler",
    "HandlerError",
    "RequestContext",
    "Roots",
    "RootsHandler",
    "SamplingHandler",
]


_publish(__name__, globals(), __all__)

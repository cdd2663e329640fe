"""Answering the server's requests: sampling, elicitation and roots handlers.

A handler is an async function of the request's typed params and a :class:`RequestContext`
(``sampling=``, ``elicitation=``, ``roots=`` of ``open_mcp_session``); the aliases
:data:`SamplingHandler`, :data:`ElicitationHandler` and :data:`RootsHandler` spell their
types. :class:`Roots` is a set of roots that may change; raise :class:`HandlerError` to
answer with a JSON-RPC error. An elicitation answer that does not match the form's schema
raises :class:`ElicitationContentError`. ``RequestContext``, ``Roots`` and ``HandlerError``
are re-exported from ``trio_mcp`` too.
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

"""The user-agent step of the authorization code flow: the redirect listener and the browser.

:class:`LoopbackBrowser` listens on ``127.0.0.1`` (RFC 8252 §7.3) for the duration of one
flow, in a nursery that lives inside the flow (so no task outlives it), opens the system
browser in a worker thread (``webbrowser`` blocks on some platforms) or prints the URL, and
waits for the redirect. The wait is bounded only by the caller's cancel scope: wrap the call
in ``trio.fail_after`` to give the user a deadline.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol
from urllib.parse import urlsplit

import trio

from .._terminal import for_terminal

__all__ = ["LoopbackBrowser", "Redirect", "UserAgent"]

logger = logging.getLogger("trio_mcp.auth")

_PAGE = (
    b"<!doctype html><html><body><p>Authorization complete. "
    b"You can close this window and return to the application.</p></body></html>"
)
_MAX_REQUEST = 16 * 1024


class Redirect(Protocol):
    """One authorization attempt's redirect endpoint (see :class:`UserAgent`)."""

    @property
    def redirect_uri(self) -> str:
        """The ``redirect_uri`` to register and send."""
        ...

    async def authorize(self, authorization_url: str) -> str:
        """Send the user to ``authorization_url``; return the full URL it redirected to.

        Args:
            authorization_url: The authorization request, a URL for the user's browser.
        """
        ...


class UserAgent(Protocol):
    """What performs the browser step of the authorization code flow.

    :class:`LoopbackBrowser` is the default. Implement this to drive the step otherwise
    (an embedded web view, a test that follows the redirect with plain HTTP).
    """

    def redirect(self) -> AbstractAsyncContextManager[Redirect]:
        """Open a redirect endpoint for one flow; close it when the block exits."""
        ...


class _LoopbackRedirect:
    def __init__(self, uri: str, path: str, opener: Callable[[str], None] | None) -> None:
        self._uri = uri
        self._path = path
        self._opener = opener
        self.send, self.receive = trio.open_memory_channel[str](1)

    @property
    def redirect_uri(self) -> str:
        return self._uri

    async def authorize(self, authorization_url: str) -> str:
        if self._opener is None:
            print(
                "Open this URL in a browser to authorize:\n\n    "
                f"{for_terminal(authorization_url, newlines=False)}\n",
                file=sys.stderr,
            )
        else:
            await trio.to_thread.run_sync(self._opener, authorization_url, abandon_on_cancel=True)
        return await self.receive.receive()

    async def serve(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            with trio.move_on_after(10):
                while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        break
                    data += chunk
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            target = parts[1] if len(parts) == 3 and parts[0] == "GET" else ""
            if urlsplit(target).path != self._path:
                await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"Content-Length: {len(_PAGE)}\r\nConnection: close\r\n\r\n"
            )
            await stream.send_all(head.encode("ascii") + _PAGE)
            base = self._uri.split("?", 1)[0]
            query = target.split("?", 1)[1] if "?" in target else ""
            try:
                self.send.send_nowait(f"{base}?{query}")
            except trio.WouldBlock:
                pass  # a second redirect: the first one counts


def _open_browser(url: str) -> None:
    import webbrowser

    if not webbrowser.open(url):
        shown = for_terminal(url, newlines=False)  # the authorization server chose parts of it
        print(f"Open this URL in a browser to authorize:\n\n    {shown}\n", file=sys.stderr)


class LoopbackBrowser:
    """The default :class:`UserAgent`: a loopback redirect listener and the system browser.

    Args:
        port: The port to listen on (``0``: any free port; RFC 8252 §7.3 requires the
            authorization server to accept any port of a loopback redirect URI).
        path: The redirect path.
        open_browser: Open the system browser (``False``: print the URL to stderr, for a
            machine without a display, or a user on another machine).
    """

    def __init__(self, *, port: int = 0, path: str = "/callback", open_browser: bool = True):
        self.port: int = port
        self.path: str = path
        self.open_browser: bool = open_browser

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[Redirect]:
        """Listen on ``127.0.0.1`` for the duration of the block (one flow)."""
        listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        uri = f"http://127.0.0.1:{port}{self.path}"
        redirect = _LoopbackRedirect(uri, self.path, _open_browser if self.open_browser else None)
        async with trio.open_nursery() as nursery:
            serve = functools.partial(trio.serve_listeners, handler_nursery=nursery)
            nursery.start_soon(serve, redirect.serve, listeners)
            try:
                yield redirect
            finally:
                nursery.cancel_scope.cancel()

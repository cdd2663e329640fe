"""The user-agent step of the authorization code flow: the redirect listener and the browser.

[`LoopbackBrowser`][trio_mcp.auth.LoopbackBrowser] listens on ``127.0.0.1`` (RFC 8252 §7.3) for the
duration of one flow. Its ``redirect()`` block only owns the listening socket: the tasks that accept
connections and open the browser live in a nursery inside ``authorize()``, so no task
outlives the call and nothing is ever yielded from inside a nursery (an error in the flow
reaches the caller as itself, never as an ``ExceptionGroup``).

What the listener guarantees:

* the authorization URL is opened (or printed) only if it is ``http(s)``
  (`check_browser_url()`): a server never chooses what the operating system's URL
  handler launches (``file:``, custom schemes);
* each connection is handled in its own task, with a size limit on the request head and a
  time limit on trio's clock; its errors (a reset, a half request, a port scanner) are
  logged and never end the flow;
* idle connections never keep the redirect out: when every slot is taken, the connection
  that has been waiting longest without sending a whole request (and for at least
  ``IDLE_GRACE`` seconds) is dropped to make room, so a port scanner, a browser's
  preconnects or a local process holding hundreds of connections delays the redirect by
  at most ``IDLE_GRACE``, not by minutes;
* only a redirect whose ``state`` matches the authorization request's ends the flow; any
  other request gets an error page and is ignored;
* the wait is bounded only by the caller's cancel scope: wrap the call in
  ``trio.fail_after`` to give the user a deadline.
"""

from __future__ import annotations

import errno
import logging
import secrets
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol
from urllib.parse import parse_qs, quote, urlsplit

import trio

from .._exceptions import AuthDiscoveryError, AuthError
from .._terminal import for_terminal

__all__ = ["LoopbackBrowser", "Redirect", "UserAgent", "check_browser_url"]

logger = logging.getLogger("trio_mcp.auth")

_DONE_PAGE = (
    b"<!doctype html><html><body><p>Authorization complete. "
    b"You can close this window and return to the application.</p></body></html>"
)
_REFUSED_PAGE = (
    b"<!doctype html><html><body><p>The authorization was not completed. "
    b"Return to the application for details.</p></body></html>"
)
_IGNORED_PAGE = (
    b"<!doctype html><html><body><p>This response does not belong to the login in "
    b"progress; it was ignored.</p></body></html>"
)
MAX_REQUEST = 16 * 1024
"""The largest request head the listener reads (a redirect's URL fits with room to spare)."""
CONNECTION_TIMEOUT = 10.0
"""Seconds (on trio's clock) one connection may take to send its request and get its page."""
MAX_CONNECTIONS = 16
"""Connections handled at once; more wait in the listen backlog."""
IDLE_GRACE = 1.0
"""Seconds a connection may stay idle (no whole request yet) before, when every slot is taken, it is
dropped to make room for the next one."""
# accept() failures that pass (trio.serve_listeners sleeps on the same ones)
_TRANSIENT_ACCEPT = frozenset(
    getattr(errno, name)
    for name in ("EMFILE", "ENFILE", "ENOMEM", "ENOBUFS", "ECONNABORTED", "EPROTO")
    if hasattr(errno, name)
)


def check_browser_url(url: str, what: str = "the authorization URL") -> None:
    """Refuse a URL that is not ``http(s)`` before it reaches a browser or a person.

    The authorization endpoint (and a device flow's verification URI) comes from a server:
    opened as given, a ``file:`` URL or a custom scheme would reach the operating system's
    URL handler and could start a program. Only ``http://`` and ``https://`` URLs with a
    host pass, and none with a user name part or a backslash before the host
    (``http://as.example\\@127.0.0.1/`` reads as ``as.example`` to a person).

    Args:
        url: The URL to open or show.
        what: What it is, for the message.

    Raises:
        AuthDiscoveryError: Any other URL.
    """
    shown = repr(url if len(url) <= 200 else url[:200] + "...")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if (
        parts is None
        or not url[:8].lower().startswith(("http://", "https://"))  # nothing stripped first
        or parts.scheme not in ("http", "https")
        or not host
    ):
        raise AuthDiscoveryError(
            f"refusing to open {what} {shown}: only http(s) URLs are opened in a browser "
            "or shown as a link (the authorization server named another scheme)"
        )
    if "@" in parts.netloc or "\\" in parts.netloc:
        raise AuthDiscoveryError(
            f"refusing to open {what} {shown}: it has a user name part or a backslash "
            "before its host, so a person would read another host than the one it opens"
        )


def _for_browser(url: str) -> str:
    """``url`` with control characters, spaces and non-ASCII percent-encoded (as a browser
    would), so what reaches the opener is one plain printable-ASCII word."""
    return quote(url, safe="!#$%&'()*+,-./:;=?@[]_~")


def _print_url(url: str) -> None:
    """Print the URL exactly as a browser is given it (``_for_browser``), safe on a terminal."""
    shown = for_terminal(_for_browser(url), newlines=False)
    print(
        f"Open this URL in a browser to authorize:\n\n    {shown}\n",
        file=sys.stderr,
        flush=True,
    )


class Redirect(Protocol):
    """One authorization attempt's redirect endpoint (see
    [`UserAgent`][trio_mcp.auth.UserAgent])."""

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

    [`LoopbackBrowser`][trio_mcp.auth.LoopbackBrowser] is the default. Implement this to drive the
    step otherwise (an embedded web view, a test that follows the redirect with plain HTTP).
    """

    def redirect(self) -> AbstractAsyncContextManager[Redirect]:
        """Open a redirect endpoint for one flow; close it when the block exits."""
        ...


def _open_browser(url: str) -> None:
    """Open ``url`` in the system browser (in a worker thread); print it if none opens."""
    check_browser_url(url)  # the last line of defence: holds whatever the caller checked
    import webbrowser

    if not webbrowser.open(_for_browser(url)):
        _print_url(url)


class _LoopbackRedirect:
    def __init__(
        self,
        listeners: list[trio.SocketListener],
        uri: str,
        path: str,
        opener: Callable[[str], None] | None,
    ) -> None:
        self._listeners = listeners
        self._uri = uri
        self._path = path
        self._opener = opener
        self._done = trio.Event()
        self._callback: str | None = None
        self._failure: AuthError | None = None
        # the connections without a whole request yet, oldest first: (start, their scope)
        self._idle: dict[object, tuple[float, trio.CancelScope]] = {}
        self._full_since: float | None = None  # since when every slot has been taken

    @property
    def redirect_uri(self) -> str:
        return self._uri

    async def authorize(self, authorization_url: str) -> str:
        check_browser_url(authorization_url)
        if self._done.is_set():
            raise RuntimeError("this redirect endpoint was already used for one flow")
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        expected = states[0] if states else None
        limiter = trio.Semaphore(MAX_CONNECTIONS)
        async with trio.open_nursery() as nursery:
            for listener in self._listeners:
                nursery.start_soon(self._accept, listener, nursery, limiter, expected)
            if self._opener is None:
                _print_url(authorization_url)
            else:
                nursery.start_soon(self._open, authorization_url)
            await self._done.wait()
            nursery.cancel_scope.cancel()
        if self._failure is not None:
            raise self._failure
        assert self._callback is not None
        return self._callback

    def _finish(self, callback: str | None, failure: AuthError | None = None) -> None:
        if self._done.is_set():
            return  # a second redirect: the first one counts
        self._callback, self._failure = callback, failure
        self._done.set()

    async def _open(self, url: str) -> None:
        assert self._opener is not None
        try:
            await trio.to_thread.run_sync(self._opener, url, abandon_on_cancel=True)
        except AuthError as exc:
            self._finish(None, exc)
        except Exception as exc:  # no browser after all: the person opens it
            logger.warning("opening the browser failed (%r); printing the URL instead", exc)
            _print_url(url)

    async def _accept(
        self,
        listener: trio.SocketListener,
        nursery: trio.Nursery,
        limiter: trio.Semaphore,
        expected: str | None,
    ) -> None:
        while True:
            since = await self._slot(limiter)
            try:
                stream = await listener.accept()
            except OSError as exc:
                limiter.release()
                if exc.errno in _TRANSIENT_ACCEPT:
                    logger.debug("the loopback listener could not accept (%r); retrying", exc)
                    await trio.sleep(0.1)
                    continue
                self._finish(None, AuthError(f"the loopback redirect listener failed: {exc!r}"))
                return
            except trio.ClosedResourceError:
                limiter.release()
                self._finish(None, AuthError("the redirect endpoint was closed before the flow"))
                return
            nursery.start_soon(self._connection, stream, limiter, expected, since)

    async def _slot(self, limiter: trio.Semaphore) -> float:
        """Take a connection slot; when none is free, make room by dropping the connection
        idle longest, once it has been idle ``IDLE_GRACE`` seconds (or wait for a slot).

        Returns:
            Since when every slot has been taken (now, if one was free): the next
            connection may have waited in the listen backlog since then, so it counts as
            idle from then on (a flood of idle connections in the backlog is dropped at
            once, not ``IDLE_GRACE`` per ``MAX_CONNECTIONS`` of them).
        """
        while True:
            try:
                limiter.acquire_nowait()
            except trio.WouldBlock:
                if self._full_since is None:
                    self._full_since = trio.current_time()
            else:
                self._full_since = None
                await trio.lowlevel.checkpoint()
                return trio.current_time()
            since = self._full_since
            if not self._idle:  # every slot is answering a whole request: soon free
                await limiter.acquire()
                return since
            key, (started, scope) = next(iter(self._idle.items()))
            wait = started + IDLE_GRACE - trio.current_time()
            if wait <= 0:
                del self._idle[key]
                scope.cancel()  # its task ends and releases its slot
                logger.debug("dropped an idle loopback connection to make room")
                await limiter.acquire()
                return since
            with trio.move_on_after(wait):
                await limiter.acquire()
                return since

    async def _connection(
        self,
        stream: trio.SocketStream,
        limiter: trio.Semaphore,
        expected: str | None,
        since: float,
    ) -> None:
        """Handle one connection; whatever happens to it stays here (logged, never raised)."""
        key = object()
        try:
            with trio.move_on_after(CONNECTION_TIMEOUT) as scope:
                self._idle[key] = (since, scope)
                async with stream:
                    await self._serve(stream, expected, lambda: self._idle.pop(key, None))
            if scope.cancelled_caught:
                logger.debug("a loopback connection timed out or was dropped; closed")
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            logger.debug("a loopback connection failed (%r); ignored", exc)
        except Exception:
            logger.exception("handling a loopback connection failed; ignored")
        finally:
            self._idle.pop(key, None)
            limiter.release()

    async def _serve(
        self,
        stream: trio.SocketStream,
        expected: str | None,
        busy: Callable[[], object] = lambda: None,
    ) -> None:
        data = bytearray()
        while b"\r\n\r\n" not in data:
            if len(data) >= MAX_REQUEST:
                await _answer(stream, "431 Request Header Fields Too Large", b"")
                return
            chunk = await stream.receive_some(4096)
            if not chunk:
                return  # closed before a whole request: nothing to answer
            data += chunk
        busy()  # a whole request: no longer idle (never dropped to make room)
        line = bytes(data.split(b"\r\n", 1)[0]).decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/1."):
            await _answer(stream, "400 Bad Request", b"")
            return
        target = parts[1]
        split = urlsplit(target)
        if split.path != self._path:
            await _answer(stream, "404 Not Found", b"")
            return
        params = parse_qs(split.query)
        states = params.get("state")
        state = states[0] if states else None
        if expected is not None and (
            state is None or not secrets.compare_digest(state.encode(), expected.encode())
        ):
            logger.info("ignored a redirect to the loopback listener with the wrong state")
            await _answer(stream, "400 Bad Request", _IGNORED_PAGE)
            return
        try:
            await _answer(stream, "200 OK", _REFUSED_PAGE if "error" in params else _DONE_PAGE)
        finally:  # the redirect arrived: it counts even if the browser left before the page
            base = self._uri.split("?", 1)[0]
            self._finish(f"{base}?{split.query}")


async def _answer(stream: trio.SocketStream, status: str, page: bytes) -> None:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(page)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    await stream.send_all(head.encode("ascii") + page)


class LoopbackBrowser:
    """The default [`UserAgent`][trio_mcp.auth.UserAgent]: a loopback redirect listener and the
    system browser.

    Only ``http(s)`` authorization URLs are opened or printed (anything else raises
    [`AuthDiscoveryError`][trio_mcp.auth.AuthDiscoveryError]); printed URLs go through
    [`for_terminal()`][trio_mcp.for_terminal]. Only the redirect whose ``state`` matches the
    authorization request's ends the wait; other requests, resets and half-sent requests
    are answered or dropped without ending it.

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
        """Listen on ``127.0.0.1`` for the duration of the block (one flow).

        Raises:
            AuthError: The port cannot be listened on (in use, no loopback interface).
        """
        try:
            listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        except OSError as exc:
            raise AuthError(
                f"cannot listen on 127.0.0.1 port {self.port} for the login redirect "
                f"({exc.strerror or exc!r}); pass another port to LoopbackBrowser"
            ) from exc
        try:
            port = listeners[0].socket.getsockname()[1]
            uri = f"http://127.0.0.1:{port}{self.path}"
            opener = _open_browser if self.open_browser else None
            yield _LoopbackRedirect(listeners, uri, self.path, opener)
        finally:
            for listener in listeners:
                with trio.CancelScope(shield=True):  # closing is immediate; never skipped
                    await listener.aclose()

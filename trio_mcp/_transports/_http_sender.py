"""Sending one HTTP request and reading its response: what the HTTP transports send with.

`HTTPSender` holds the client (see ``_http_client.py``) and sends every request the
transports make through `HTTPSender.open()`:

* retries per the [`RetryPolicy`][trio_mcp.RetryPolicy] (connection failures and HTTP 429/503
  for any request, other 5xx and 408 for idempotent ones), each attempt through the
  [`CircuitBreaker`][trio_mcp.CircuitBreaker];
* same-origin redirects only, followed here (``_redirects.py`` says which);
* the direct path: a client of ours with no auth flow and no proxy for the URL sends
  straight to trio_mcp's pool, skipping ``client.send``'s per-request machinery;
* errors converted at the one boundary (``_http_errors.py``).

Bodies are read with a size limit (`HTTPSender.read_body()`) or chunk by chunk
(`HTTPSender.consume()`), stopping early without leaving httpx's generators
unfinished. `HTTPCore` builds the transports'
shared machinery on it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Final

import trio

from .._exceptions import HTTPStatusError, MCPError, MessageTooLargeError, TransportError
from .._redact import display_url
from .._resilience import CircuitBreaker, RetryPolicy
from ._http_client import auth_for
from ._http_errors import convert_httpx_error, httpx_errors, not_delivered, status_error
from ._redirects import MAX_REDIRECTS, REDIRECT_STATUSES, redirect_target

if TYPE_CHECKING:
    import httpx

    from ._h11pool import H11Transport

__all__ = ["ERROR_BODY_LIMIT", "HTTPSender", "close_response", "content_type"]

logger = logging.getLogger("trio_mcp.http")

ERROR_BODY_LIMIT: Final = 64 * 1024
"""How much of an HTTP error body is kept in [`HTTPStatusError`][trio_mcp.HTTPStatusError]."""

# How many parsed URLs a transport keeps (it uses one or two: the endpoint, a redirect).
_URL_MEMORY: Final = 16
# The methods httpx sends a ``Content-Length: 0`` with when they have no body.
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})


def content_type(response: httpx.Response) -> str:
    """The media type of a response, lowercase, without parameters."""
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


_CLOSE_RESPONSE_TIMEOUT: Final = 5.0
"""The longest a response's close may take once its task is cancelled (shielded)."""


async def close_response(response: httpx.Response) -> None:
    """Close a response; a failure to close is only logged (nothing more can be lost).

    Shielded (for at most `_CLOSE_RESPONSE_TIMEOUT` seconds): a cancellation of the
    closing task (the transport closing, a timeout) cannot leave the body and its
    connection open. httpx marks a response closed before it closes the body, so a close
    cut short is never tried again.
    """
    if response.is_closed:
        return  # read to its end (httpx closed it): no cancel scope on the hot path
    try:
        with trio.move_on_after(_CLOSE_RESPONSE_TIMEOUT, shield=True):
            await response.aclose()
    except httpx_errors() as exc:
        logger.debug(
            "closing the response from %s failed: %r", display_url(response.request.url), exc
        )


class HTTPSender:
    """Sends HTTP requests through one client and reads their responses.

    The base of `HTTPCore`.

    Args:
        client: The httpx client every request goes through.
        own_client: Whether the transport closes ``client``.
        direct: The pool under ``client`` that requests go to directly, if they may.
        headers: Extra headers for every request.
        auth: The httpx auth flow for every request.
        timeout: Seconds to connect, write and get a pooled connection.
        max_message_size: The largest incoming message, in bytes.
        retry: The retry policy of requests (``None``: no retries).
        breaker: The circuit breaker every request goes through.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        own_client: bool,
        direct: H11Transport | None = None,
        headers: Mapping[str, str] | None,
        auth: httpx.Auth | None,
        timeout: float,
        max_message_size: int,
        retry: RetryPolicy | None,
        breaker: CircuitBreaker | None,
    ) -> None:
        from ._h11pool import plain_body  # (it imports httpx: here, for import cost)

        self.client = client
        self.own_client = own_client
        self._plain_body = plain_body
        self._direct = direct
        # the client's default headers (User-Agent, Accept-Encoding...), for direct requests
        self._default_headers = {name.lower(): value for name, value in client.headers.items()}
        # parsed request URLs and their Host header values, for direct requests
        self._urls: dict[str, tuple[httpx.URL, str]] = {}
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_message_size = max_message_size
        self.retry = retry
        self.breaker = breaker
        self._auth_kwargs: dict[str, Any] = (
            {"auth": auth_for(client, auth)} if auth is not None else {}
        )
        self._stream_timeout: Any
        self._short_timeout: Any
        if own_client:  # (an httpx or an httpx2 client: its own library's Timeout)
            timeout_type = type(client.timeout)
            self._stream_timeout = timeout_type(timeout, read=None)
            self._short_timeout = timeout_type(timeout)
        else:
            # A caller's client keeps its own timeouts (connect, write, pool, and read for
            # short exchanges); only a response stream, which may rightly stay silent for
            # as long as a tool runs, is read without a time limit.
            configured = client.timeout
            self._short_timeout = configured
            self._stream_timeout = type(configured)(
                connect=configured.connect, read=None, write=configured.write, pool=configured.pool
            )

    @property
    def uses_pool_directly(self) -> bool:
        """Whether requests go to trio_mcp's pool directly, not through ``client.send``."""
        return self._direct is not None

    async def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None = None,
        idempotent: bool = False,
        retry: bool = True,
        read_timeout: bool = False,
    ) -> httpx.Response:
        """Send one HTTP request and return the streaming response (the caller closes it).

        Connection failures are retried per the retry policy (any request: nothing
        reached the server); HTTP 5xx/408/429 only for idempotent requests (and 429/503
        for any). Each attempt goes through the circuit breaker, where connection
        failures and 5xx/408/429 count as failures. Redirects are handled as
        ``_redirects.py`` says.

        Args:
            method: The HTTP method.
            url: The URL.
            headers: The request's headers.
            content: The request's body.
            idempotent: Whether the request may be retried after reaching the server.
            retry: Whether to apply the retry policy at all.
            read_timeout: Whether reading the response is bounded by the timeout too.

        Raises:
            HTTPStatusError: The final status was 300 or more (the body is read, truncated).
            TransportError: The request could not be made, or was redirected to another
                origin.
            CircuitOpenError: The circuit breaker refused the request.
        """
        policy = self.retry if retry else None
        attempt = 0
        while True:
            attempt += 1
            delay: float | None = None
            try:
                return await self._open_once(method, url, headers, content, read_timeout)
            except MCPError as exc:
                if policy is not None and (idempotent or not_delivered(exc)):
                    delay = policy.next_delay(attempt, exc)
                if delay is None:
                    raise
            logger.debug(
                "retrying %s %s in %.3fs (attempt %d)", method, display_url(url), delay, attempt + 1
            )
            await trio.sleep(delay)

    async def _open_once(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        read_timeout: bool,
    ) -> httpx.Response:
        guard = self.breaker.guard() if self.breaker is not None else nullcontext()
        with guard:
            response = await self._send_following(method, url, headers, content, read_timeout)
            status = response.status_code
            if status >= 500 or status in (408, 429):
                raise await self._status_error(response)  # counts against the breaker
        if status >= 300:
            raise await self._status_error(response)
        return response

    async def _send_following(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        read_timeout: bool,
    ) -> httpx.Response:
        """Send a request, following same-origin redirects only."""
        timeout = self._short_timeout if read_timeout else self._stream_timeout
        target = url
        for _hop in range(MAX_REDIRECTS + 1):
            response = await self._send_one(method, target, headers, content, timeout)
            status = response.status_code
            location = response.headers.get("location")
            if status not in REDIRECT_STATUSES or location is None:
                return response
            await close_response(response)
            target = redirect_target(method, target, status, location)
        raise TransportError(
            f"{display_url(url)} redirected {method} more than {MAX_REDIRECTS} times; "
            "use the final URL"
        )

    async def _send_one(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        timeout: Any,
    ) -> httpx.Response:
        try:
            if self._direct is not None:
                return await self._send_direct(self._direct, method, url, headers, content, timeout)
            request = self.client.build_request(
                method, url, headers=headers, content=content, timeout=timeout
            )
            return await self.client.send(
                request, stream=True, follow_redirects=False, **self._auth_kwargs
            )
        except MCPError:
            raise  # e.g. from an auth flow
        except httpx_errors() as exc:
            raise convert_httpx_error(exc, url, f"sending {method} to") from exc
        except Exception as exc:  # a custom transport or auth flow failed
            raise TransportError(f"sending {method} to {display_url(url)} failed: {exc!r}") from exc

    async def _send_direct(
        self,
        pool: H11Transport,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        timeout: Any,
    ) -> httpx.Response:
        """What ``client.send`` does for a client of ours, without rebuilding the URL.

        The request carries the headers ``client.build_request`` would give it (``Host``,
        the client's defaults, ``headers``, ``Content-Length``), made in one pass: its body
        is given as a stream, so httpx does not encode it and merge its headers again.
        """
        import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

        known = self._urls.get(url)
        if known is None:
            if len(self._urls) >= _URL_MEMORY:
                self._urls.clear()
            parsed = httpx.URL(url)
            known = self._urls[url] = (parsed, parsed.netloc.decode("ascii"))
        target, host = known
        merged = {"host": host}
        merged.update(self._default_headers)
        for name, value in headers.items():
            merged[name.lower()] = value
        if content or method in _BODY_METHODS:
            merged["content-length"] = str(len(content or b""))
        request = httpx.Request(
            method,
            target,
            headers=merged,
            stream=httpx.ByteStream(content or b""),
            extensions={"timeout": timeout.as_dict()},
        )
        request.read()  # (a whole body: sent with the head, in one write)
        cookies = self.client.cookies
        if cookies.jar:
            cookies.set_cookie_header(request)
        response = await pool.handle_async_request(request)
        response.request = request
        if "set-cookie" in response.headers:
            cookies.extract_cookies(response)
        return response

    async def _status_error(self, response: httpx.Response) -> HTTPStatusError:
        try:
            body = await self.read_body(response, ERROR_BODY_LIMIT, truncate=True)
        except MCPError:
            body = b""
        finally:
            await close_response(response)
        return status_error(response, body)

    async def consume(
        self, response: httpx.Response, on_chunk: Callable[[bytes], Awaitable[bool]], doing: str
    ) -> bool:
        """Feed a response's body to ``on_chunk`` until it returns True or the body ends.

        An unencoded body from trio_mcp's pool is read straight from the connection
        (`plain_body()`): stopping early is not reading
        on. Any other body goes through ``response.aiter_bytes()``; to stop early, a cancel
        scope around the iteration is cancelled, so the cancellation unwinds httpx's chain
        of async generators from the innermost one and none is left unfinished. Any
        exception from ``on_chunk`` (an [`MCPError`][trio_mcp.MCPError], a cancellation of
        the reading task while ``on_chunk`` waits) stops the reading the same way and is
        re-raised: raised straight out of the loop, it would leave every generator of the
        chain suspended, to be finalized by the garbage collector with a
        ``ResourceWarning``. A body not read to its end is closed with the response: its
        connection is not reused.

        Args:
            response: The streaming response.
            on_chunk: Called with each chunk; returns True to stop reading.
            doing: What is being done, for error messages.

        Returns:
            True if ``on_chunk`` stopped the reading, False if the body ended.

        Raises:
            ConnectionClosed: The connection broke while reading.
        """
        plain = self._plain_body(response)
        try:
            if plain is None:
                return await self._consume_through_httpx(response, on_chunk)
            # our pool's unencoded body, a plain iterator: stopping is not reading on
            async for chunk in plain:
                if await on_chunk(chunk):
                    return True
            return False
        except httpx_errors() as exc:
            raise convert_httpx_error(exc, str(response.request.url), doing) from exc

    @staticmethod
    async def _consume_through_httpx(
        response: httpx.Response, on_chunk: Callable[[bytes], Awaitable[bool]]
    ) -> bool:
        stop = False
        failure: BaseException | None = None
        with trio.CancelScope() as scope:
            async for chunk in response.aiter_bytes():
                if stop:
                    continue  # until the cancellation lands
                try:
                    stop = await on_chunk(chunk)
                except BaseException as exc:  # a cancellation too: no generator left open
                    failure, stop = exc, True
                if stop:
                    scope.cancel()
        if failure is not None:
            try:
                raise failure
            finally:
                del failure  # (no reference cycle through the traceback)
        return stop

    async def read_body(
        self, response: httpx.Response, limit: int | None = None, *, truncate: bool = False
    ) -> bytes:
        """Read a response body, at most ``limit`` bytes (default: the message size limit).

        Args:
            response: The streaming response.
            limit: The most bytes to read.
            truncate: Whether to cut a longer body instead of failing.

        Raises:
            MessageTooLargeError: The body is larger than the limit (unless ``truncate``).
            ConnectionClosed: The connection broke while reading.
        """
        cap = self.max_message_size if limit is None else limit
        declared = response.headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > cap:
            raise MessageTooLargeError(int(declared), cap)
        chunks: list[bytes] = []  # joined once at the end (a one-chunk body: not copied)
        size = 0

        async def on_chunk(chunk: bytes) -> bool:
            nonlocal size
            chunks.append(chunk)
            size += len(chunk)
            if size <= cap:
                return False
            if truncate:
                chunks[-1] = chunk[: len(chunk) - (size - cap)]
                return True
            raise MessageTooLargeError(size, cap)

        await self.consume(response, on_chunk, "reading the response from")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

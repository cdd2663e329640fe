"""Bounded bodies: every answer of an authorization server or protected-resource endpoint.

Metadata documents, token, registration and device authorization answers are small JSON
documents. `send()` reads each one as a stream and stops at `BODY_LIMIT` (1 MiB):
a larger (or endless) body fails with the caller's error class after at most the limit
plus one network chunk has been read, so a hostile endpoint cannot grow this process.
A compressed body is decompressed with the same bound (no decompression bomb); only
``identity``, ``gzip`` and ``deflate`` encodings are accepted (``identity`` is asked for).
Each request, its answer read, must end within `REQUEST_DEADLINE` (60 s): a server
dripping a byte at a time cannot hold a flow. Redirects are never followed (even by a
caller's client that follows them): a redirect's
target would escape the endpoint policy. `open_client()` is the client those requests
go through: the caller's ``http_client=``, or a short-lived one.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
import trio

from .._exceptions import AuthError, TokenRequestError

__all__ = ["BODY_LIMIT", "Answer", "open_client", "send"]

BODY_LIMIT = 1024 * 1024
"""The largest body read from an OAuth endpoint, in bytes."""

REQUEST_DEADLINE = 60.0
"""Seconds (on trio's clock) one whole request to an OAuth endpoint may take, answer read.

Per-read timeouts alone let a server that sends a byte every 29 seconds hold a flow for
days; this bounds the request, however its bytes arrive."""


@dataclass(frozen=True)
class Answer:
    """A whole, bounded HTTP answer."""

    status_code: int
    headers: httpx.Headers = field(repr=False)
    content: bytes = field(repr=False)


class _Decoder:
    def __init__(self, encoding: str, limit: int) -> None:
        self._limit = limit
        self._zlib = None
        if encoding == "gzip":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj()

    def decode(self, chunk: bytes, have: int) -> bytes | None:
        """The decoded bytes of ``chunk``, or ``None`` when they pass the limit."""
        if self._zlib is None:
            return chunk
        room = self._limit + 1 - have
        out = self._zlib.decompress(chunk, room)
        if len(out) >= room or self._zlib.unconsumed_tail:
            return None
        return out


@asynccontextmanager
async def open_client(given: httpx.AsyncClient | None) -> AsyncGenerator[httpx.AsyncClient]:
    """The client for one flow: ``given`` (its owner closes it), else a new one, closed after."""
    if given is not None:
        yield given
        return
    async with httpx.AsyncClient(follow_redirects=False, timeout=30.0) as client:
        yield client


async def send(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    error: type[AuthError],
    doing: str,
    headers: Mapping[str, str] | None = None,
    content: bytes | str | None = None,
    limit: int = BODY_LIMIT,
) -> Answer:
    """Send one request to an OAuth endpoint and read its answer, at most ``limit`` bytes.

    Args:
        http: The client for the endpoint.
        method: ``GET`` or ``POST``.
        url: The endpoint (already allowed by the endpoint policy).
        error: The exception class for a failure (a network error, a body too large).
        doing: What the request is, for the message (``"the token request to URL"``).
        headers: Request headers.
        content: The request body.
        limit: The largest body accepted.

    Raises:
        AuthError: Of class ``error``: the request failed or took longer than
            ``REQUEST_DEADLINE``, or the body passed ``limit`` (or came in an encoding
            trio_mcp does not decode). ``TokenRequestError`` gets
            ``error="network_error"`` / ``"invalid_response"``.
    """
    with trio.move_on_after(REQUEST_DEADLINE):
        return await _send(http, method, url, error, doing, headers, content, limit)
    raise _failed(
        error,
        f"{doing} did not complete within {REQUEST_DEADLINE:g} seconds; giving up "
        "(the endpoint is too slow, or hostile)",
        "network_error",
    )


async def _send(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    error: type[AuthError],
    doing: str,
    headers: Mapping[str, str] | None,
    content: bytes | str | None,
    limit: int,
) -> Answer:
    request_headers = {"Accept-Encoding": "identity", **(headers or {})}
    try:
        # never follow a redirect, whatever the client's setting: its target would escape
        # the endpoint policy (a 307 would re-post a secret to it)
        async with http.stream(
            method, url, headers=request_headers, content=content, follow_redirects=False
        ) as response:
            if response.is_stream_consumed:  # read by the transport (httpx.MockTransport)
                if len(response.content) > limit:
                    raise _too_large(error, doing, "")
                return Answer(response.status_code, response.headers, response.content)
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("identity", "gzip", "deflate", ""):
                raise _failed(
                    error,
                    f"{doing} answered in content encoding {encoding!r}, which trio_mcp does "
                    "not decode; refusing it",
                    "invalid_response",
                )
            declared = response.headers.get("content-length", "")
            if encoding in ("identity", "") and declared.isdigit() and int(declared) > limit:
                raise _too_large(error, doing, f" (Content-Length {declared})")
            decoder = _Decoder(encoding, limit)
            body = bytearray()
            refused: str | None = None
            # To stop early, cancel a scope around the iteration: the cancellation unwinds
            # httpx's chain of async generators from the innermost one (none is left
            # unfinished); breaking out of the loop would leave them to the GC.
            with trio.CancelScope() as scope:
                async for chunk in response.aiter_raw():
                    if refused is not None:
                        continue  # until the cancellation lands
                    try:
                        decoded = decoder.decode(chunk, len(body))
                    except zlib.error:
                        decoded, refused = None, "corrupt"
                    if decoded is None or len(body) + len(decoded) > limit:
                        refused = refused or "large"
                        scope.cancel()
                        continue
                    body += decoded
            if refused == "corrupt":
                raise _failed(
                    error, f"{doing} answered with a corrupt compressed body", "invalid_response"
                )
            if refused is not None:
                raise _too_large(error, doing, "")
            return Answer(response.status_code, response.headers, bytes(body))
    except httpx.HTTPError as exc:
        raise _failed(error, f"{doing} failed: {exc!r}", "network_error") from exc


def _failed(error: type[AuthError], message: str, code: str) -> AuthError:
    if issubclass(error, TokenRequestError):
        return error(message, error=code or "invalid_response", status_code=0)
    return error(message)


def _too_large(error: type[AuthError], doing: str, detail: str) -> AuthError:
    message = (
        f"{doing} answered with a body larger than {BODY_LIMIT // 1024} KiB{detail}; "
        "refusing to read more (the endpoint is broken or hostile)"
    )
    return _failed(error, message, "invalid_response")

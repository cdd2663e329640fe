"""A real HTTP/1.1 server on 127.0.0.1 for the OAuth tests, driven by an httpx-style handler.

``serve(handler)`` runs ``handler(httpx.Request) -> httpx.Response`` (plain or async) behind
a listening socket, so the OAuth client under test talks to it over real TCP with its own
httpx client. A response whose stream was not read (``httpx.Response(stream=...)``) is sent
chunked as it is produced: an endless stream makes an endless body. Every connection is
closed after one answer.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import inspect
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx
import trio

import trio_mcp

Handler = Callable[[httpx.Request], "httpx.Response | Awaitable[httpx.Response]"]


class Endless(httpx.AsyncByteStream):
    """A body that never ends: ``chunk`` after ``chunk``; counts what it produced."""

    def __init__(self, chunk: bytes = b" " * 65536) -> None:
        self.chunk = chunk
        self.produced = 0

    def __aiter__(self) -> Endless:  # an iterator, not a generator: nothing to finalize
        return self

    async def __anext__(self) -> bytes:
        await trio.lowlevel.checkpoint()
        self.produced += len(self.chunk)
        return self.chunk


async def _read_request(stream: trio.SocketStream, base: str) -> httpx.Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = [tuple(line.split(":", 1)) for line in lines[1:] if ":" in line]
    header_map = {name.strip().lower(): value.strip() for name, value in headers}
    length = int(header_map.get("content-length", "0"))
    while len(body) < length:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        body += chunk
    pairs = [(name.strip(), value.strip()) for name, value in headers]
    return httpx.Request(method, base + target, headers=pairs, content=body)


async def _answer(stream: trio.SocketStream, response: httpx.Response) -> None:
    reason = response.reason_phrase or "OK"
    head = [f"HTTP/1.1 {response.status_code} {reason}", "Connection: close"]
    skip = {"content-length", "transfer-encoding", "connection"}
    head += [f"{k}: {v}" for k, v in response.headers.items() if k.lower() not in skip]
    if isinstance(response.stream, httpx.ByteStream):
        body = b"".join(response.stream)  # as given (not decoded)
        head.append(f"Content-Length: {len(body)}")
        await stream.send_all(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        return
    body_stream: Any = response.stream
    declared = response.headers.get("content-length")
    if declared is not None:  # a declared length, then the body as it comes
        head.append(f"Content-Length: {declared}")
        await stream.send_all(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        async for chunk in body_stream:
            await stream.send_all(chunk)
        return
    head.append("Transfer-Encoding: chunked")
    await stream.send_all(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    async for chunk in body_stream:
        await stream.send_all(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    await stream.send_all(b"0\r\n\r\n")


@asynccontextmanager
async def serve(handler: Handler) -> AsyncGenerator[str]:
    """Serve ``handler`` on 127.0.0.1 for the block; yields the base URL (no slash)."""
    base = ""

    async def connection(stream: trio.SocketStream) -> None:
        async with stream:
            try:
                request = await _read_request(stream, base)
                if request is None:
                    return
                result = handler(request)
                response = await result if inspect.isawaitable(result) else result
                await _answer(stream, response)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client hung up (e.g. on an endless body)

    async with trio.open_nursery() as nursery:
        serve_tcp = functools.partial(trio.serve_tcp, host="127.0.0.1")
        listeners: list[trio.SocketListener] = await nursery.start(serve_tcp, connection, 0)
        port = listeners[0].socket.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        try:
            yield base
        finally:
            nursery.cancel_scope.cancel()


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


@dataclass
class World:
    """Protected MCP endpoints (``resources``, paths) and one authorization server.

    The AS registers clients (DCR), authorizes (PKCE checked; with ``exact_redirects``, a
    ``redirect_uri`` must be one the client registered, character for character), issues
    tokens audience-bound to the ``resource`` asked for, and refreshes them. Each MCP
    endpoint accepts only its own tokens and records every ``Authorization`` it saw.
    """

    base: str = "http://127.0.0.1:9"
    resources: tuple[str, ...] = ("/a/mcp", "/b/mcp")
    exact_redirects: bool = False
    expires_in: int | None = 3600
    metadata_override: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())
    prm_override: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())
    challenge_metadata_url: str | None = None
    endless: set[str] = field(default_factory=lambda: set[str]())
    raw: dict[str, httpx.Response] = field(default_factory=lambda: dict[str, httpx.Response]())
    clients: dict[str, list[str]] = field(default_factory=lambda: dict[str, list[str]]())
    tokens: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    refresh_tokens: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    codes: dict[str, tuple[str, str, str]] = field(
        default_factory=lambda: dict[str, tuple[str, str, str]]()
    )
    seen: dict[str, list[str | None]] = field(default_factory=lambda: dict[str, list[str | None]]())
    log: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())
    streams: list[Endless] = field(default_factory=lambda: list[Endless]())
    issued: int = 0

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.log if k == kind)

    def revoke(self, resource_path: str) -> None:
        """Every token for this resource stops working (refresh tokens too)."""
        url = self.base + resource_path
        for table in (self.tokens, self.refresh_tokens):
            for token in [t for t, r in table.items() if r == url]:
                del table[token]

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in self.endless:
            stream = Endless()
            self.streams.append(stream)
            return httpx.Response(200, headers={"Content-Type": "application/json"}, stream=stream)
        if path in self.raw:
            return self.raw[path]
        if path in self.resources:
            return self.mcp(request, path)
        prm_prefix = "/.well-known/oauth-protected-resource"
        if path.startswith(prm_prefix) and path[len(prm_prefix) :] in self.resources:
            self.log.append(("prm", path))
            doc = {
                "resource": self.base + path[len(prm_prefix) :],
                "authorization_servers": [self.base],
                **self.prm_override,
            }
            return httpx.Response(200, json=doc)
        if path == "/.well-known/oauth-authorization-server":
            self.log.append(("metadata", path))
            return httpx.Response(
                200,
                json={
                    "issuer": self.base,
                    "authorization_endpoint": f"{self.base}/authorize",
                    "token_endpoint": f"{self.base}/token",
                    "registration_endpoint": f"{self.base}/register",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                    **self.metadata_override,
                },
            )
        if path == "/register":
            body = json.loads(request.content)
            client_id = f"client-{len(self.clients) + 1}"
            self.clients[client_id] = list(body.get("redirect_uris", []))
            self.log.append(("register", client_id))
            return httpx.Response(201, json={"client_id": client_id})
        if path == "/authorize":
            return self.authorize(request)
        if path == "/token":
            return self.token(request)
        return httpx.Response(404)

    def mcp(self, request: httpx.Request, path: str) -> httpx.Response:
        auth = request.headers.get("authorization")
        self.seen.setdefault(path, []).append(auth)
        token = (auth or "").removeprefix("Bearer ")
        if self.tokens.get(token) != self.base + path:
            metadata = self.challenge_metadata_url or (
                f"{self.base}/.well-known/oauth-protected-resource{path}"
            )
            return httpx.Response(
                401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'}
            )
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})

    def authorize(self, request: httpx.Request) -> httpx.Response:
        query = {k: v[0] for k, v in parse_qs(request.url.query.decode()).items()}
        client_id, redirect_uri = query["client_id"], query["redirect_uri"]
        self.log.append(("authorize", redirect_uri))
        if self.exact_redirects and redirect_uri not in self.clients.get(client_id, []):
            return httpx.Response(400, text=f"redirect_uri {redirect_uri} is not registered")
        code = f"code-{len(self.codes) + 1}"
        self.codes[code] = (query["resource"], query["code_challenge"], redirect_uri)
        params = {"code": code, "state": query["state"], "iss": self.base}
        return httpx.Response(302, headers={"Location": f"{redirect_uri}?{urlencode(params)}"})

    def _issue(self, resource: str) -> httpx.Response:
        self.issued += 1
        token, refresh = f"token-{self.issued}", f"refresh-{self.issued}"
        self.tokens[token] = resource
        self.refresh_tokens[refresh] = resource
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "refresh_token": refresh,
        }
        if self.expires_in is not None:
            answer["expires_in"] = self.expires_in
        return httpx.Response(200, json=answer)

    def token(self, request: httpx.Request) -> httpx.Response:
        form = _form(request)
        grant = form["grant_type"]
        self.log.append(("token", f"{grant} {form.get('resource')}"))
        if grant == "authorization_code":
            resource, challenge, redirect_uri = self.codes.pop(form["code"])
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == challenge
            assert form["redirect_uri"] == redirect_uri and form["resource"] == resource
            return self._issue(resource)
        if grant == "refresh_token":
            resource = self.refresh_tokens.pop(form["refresh_token"], None)
            if resource is None:
                return httpx.Response(400, json={"error": "invalid_grant"})
            return self._issue(resource)
        if grant == "client_credentials":
            return self._issue(form["resource"])
        return httpx.Response(400, json={"error": "unsupported_grant_type"})


class BrowserAgent:
    """A user agent that approves at once: GETs the authorization URL over real HTTP and
    follows its redirect to a real :class:`~trio_mcp.auth.LoopbackBrowser` listener.

    An authorization server that refuses the request (no redirect) makes
    :meth:`authorize` raise :class:`~trio_mcp.auth.AuthorizationDeniedError`.
    """

    def __init__(self) -> None:
        self.authorization_urls: list[str] = []
        self.redirect_uris: list[str] = []

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[trio_mcp.auth.Redirect]:
        async with trio_mcp.auth.LoopbackBrowser(open_browser=False).redirect() as inner:
            self.redirect_uris.append(inner.redirect_uri)
            yield _BrowserRedirect(inner, self)


class _BrowserRedirect:
    def __init__(self, inner: trio_mcp.auth.Redirect, agent: BrowserAgent) -> None:
        self._inner = inner
        self._agent = agent

    @property
    def redirect_uri(self) -> str:
        return self._inner.redirect_uri

    async def authorize(self, authorization_url: str) -> str:
        self._agent.authorization_urls.append(authorization_url)
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            answer = await browser.get(authorization_url)
            if answer.status_code != 302:
                raise trio_mcp.auth.AuthorizationDeniedError(
                    f"the authorization server refused: {answer.text}"
                )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(browser.get, answer.headers["location"])
                return await self._inner.authorize(authorization_url)

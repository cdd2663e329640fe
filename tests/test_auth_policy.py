"""The endpoint policy and bounded bodies, against hostile metadata on loopback servers.

Every URL discovery yields must be ``https``, or ``http`` on a loopback host; anything
else is an :class:`~trio_mcp.auth.AuthDiscoveryError` before a request goes there (no secret,
no PKCE verifier, no browser). Every body from an authorization server or a
protected-resource endpoint is read with a 1 MiB bound.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._auth import _bodies, _grants, _policy

from .auth_loopback import BrowserAgent, Endless, World, serve

A = "/a/mcp"


# ------------------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    "url",
    [
        "https://as.example/token",
        "https://as.example:8443/t?x=1",
        "http://127.0.0.1:8080/token",
        "http://127.8.9.10/token",
        "http://[::1]:9/token",
        "http://localhost/token",
        "http://LOCALHOST:1/x",
        "HTTPS://AS.EXAMPLE/",
    ],
)
def test_allowed_endpoints(url: str) -> None:
    assert _policy.check_endpoint(url, "the token endpoint") == url


@pytest.mark.parametrize(
    "url",
    [
        "http://as.example/token",
        "http://10.0.0.1/token",
        "http://[::2]/token",
        "http://localhost.evil.example/token",
        "http://127.0.0.1.evil.example/token",
        "ftp://127.0.0.1/token",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,hi",
        "https:///no-host",
        "https://as.example:99999/",
        "//as.example/token",
        "",
    ],
)
def test_refused_endpoints(url: str) -> None:
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="not an https URL"):
        _policy.check_endpoint(url, "the token endpoint")


@given(st.text(max_size=80) | st.from_regex(r"[a-z]{0,6}://[^/]{0,20}(/.{0,10})?"))
def test_policy_never_raises_anything_else(url: str) -> None:
    try:
        allowed = _policy.check_endpoint(url, "x")
    except trio_mcp.auth.AuthDiscoveryError:
        return
    assert allowed == url
    assert url.lower().startswith(("https://", "http://"))


# ------------------------------------------------------------------ hostile metadata


class Recorder:
    """The authorization-server client: records every request it sends."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.client = httpx.AsyncClient(event_hooks={"request": [self._record]}, timeout=30)

    async def _record(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def hosts(self) -> set[str]:
        return {request.url.host for request in self.requests}


@asynccontextmanager
async def hostile(world: World, **options: Any) -> AsyncGenerator[tuple[str, Recorder]]:
    async with serve(world.handler) as base:
        world.base = base
        recorder = Recorder()
        async with recorder.client:
            yield base, recorder


async def request_through(world: World, recorder: Recorder, **options: Any) -> httpx.Response:
    options.setdefault("dpop", False)
    auth = trio_mcp.OAuth(http_client=recorder.client, **options)
    async with httpx.AsyncClient(auth=auth, timeout=30) as client:
        with trio.fail_after(30):
            return await client.get(world.base + A)


CONFIDENTIAL = {"grant": "client_credentials", "client_id": "svc", "client_secret": "s3cret"}


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("metadata", "token_endpoint", "http://as.example/token"),
        ("metadata", "token_endpoint", "ftp://127.0.0.1/token"),
        ("metadata", "token_endpoint", "http://10.1.2.3/token"),
        ("metadata", "registration_endpoint", "http://as.example/register"),
        ("metadata", "device_authorization_endpoint", "http://as.example/device"),
        ("metadata", "revocation_endpoint", "http://as.example/revoke"),
        ("prm", "authorization_servers", ["http://as.example"]),
        ("challenge", "", "http://evil.example/.well-known/oauth-protected-resource"),
    ],
)
async def test_no_request_goes_to_a_refused_endpoint(where: str, field: str, value: Any) -> None:
    world = World()
    if where == "metadata":
        world.metadata_override[field] = value
    elif where == "prm":
        world.prm_override[field] = value
    else:
        world.challenge_metadata_url = value
    async with hostile(world) as (_, recorder):
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="not an https URL"):
            await request_through(world, recorder, **CONFIDENTIAL)
    assert recorder.hosts() <= {"127.0.0.1"}  # nothing went anywhere else
    assert world.count("token") == 0
    for request in recorder.requests:
        assert "authorization" not in request.headers  # the secret was never sent


@pytest.mark.parametrize(
    "endpoint", ["javascript:alert(document.cookie)", "file:///etc/passwd", "http://as.example/a"]
)
async def test_a_hostile_authorization_endpoint_never_reaches_the_browser(endpoint: str) -> None:
    world = World()
    world.metadata_override["authorization_endpoint"] = endpoint
    agent = BrowserAgent()
    async with hostile(world) as (_, recorder):
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="not an https URL"):
            await request_through(world, recorder, user_agent=agent)
    assert agent.authorization_urls == [] and agent.redirect_uris == []
    assert world.count("register") == 0


async def test_an_issuer_on_another_host_is_refused() -> None:
    world = World()
    world.metadata_override["issuer"] = "https://other.example"
    async with hostile(world) as (_, recorder):
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match=r"other\.example"):
            await request_through(world, recorder, **CONFIDENTIAL)
    assert world.count("token") == 0


async def test_loopback_http_and_https_endpoints_are_used() -> None:
    # the policy's other half: a loopback http AS works end to end (local development)
    world = World()
    async with hostile(world) as (_, recorder):
        response = await request_through(world, recorder, **CONFIDENTIAL)
    assert response.status_code == 200


# ----------------------------------------------------------------------- endless bodies


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/.well-known/oauth-protected-resource/a/mcp", trio_mcp.auth.AuthDiscoveryError),
        ("/.well-known/oauth-authorization-server", trio_mcp.auth.AuthDiscoveryError),
        ("/token", trio_mcp.auth.TokenRequestError),
    ],
)
async def test_endless_bodies_over_real_sockets(path: str, error: type[Exception]) -> None:
    world = World()
    world.endless.add(path)
    async with hostile(world) as (_, recorder):
        with pytest.raises(error, match="larger than 1024 KiB"):
            await request_through(world, recorder, **CONFIDENTIAL)
    (stream,) = world.streams
    # what the server produced before the client hung up: the limit, a chunk, and what
    # the sockets' buffers held (the client read at most the limit and one chunk)
    assert stream.produced < 64 * 1024 * 1024


async def test_endless_registration_answer() -> None:
    world = World()
    world.endless.add("/register")
    async with hostile(world) as (_, recorder):
        with pytest.raises(trio_mcp.auth.ClientRegistrationError, match="larger than 1024 KiB"):
            await request_through(world, recorder, user_agent=BrowserAgent())


class CountingTransport(httpx.AsyncBaseTransport):
    """Answers every request with an endless body, unread (what a socket would give)."""

    def __init__(self, encoding: str | None = None, chunk: bytes = b" " * 65536) -> None:
        self.stream = Endless(chunk)
        self.encoding = encoding

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if self.encoding:
            headers["Content-Encoding"] = self.encoding
        return httpx.Response(200, headers=headers, stream=self.stream)


@pytest.mark.parametrize(
    "error", [trio_mcp.auth.AuthDiscoveryError, trio_mcp.auth.TokenRequestError]
)
async def test_at_most_the_limit_and_one_chunk_is_read(error: type[trio_mcp.AuthError]) -> None:
    transport = CountingTransport()
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(error, match="larger than"):
            await _bodies.send(http, "GET", "https://as.example/x", error=error, doing="GET x")
    assert transport.stream.produced <= _bodies.BODY_LIMIT + 65536


async def test_a_compression_bomb_is_bounded_too() -> None:
    # 64 KiB of gzip that inflates to 64 MiB, endlessly: refused at the limit of inflated
    # bytes
    bomb = gzip.compress(b"\0" * 64 * 1024 * 1024)
    transport = CountingTransport("gzip", bomb)
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="larger than"):
            await _bodies.send(
                http,
                "GET",
                "https://as.example/x",
                error=trio_mcp.auth.AuthDiscoveryError,
                doing="x",
            )
    assert transport.stream.produced == len(bomb)  # one chunk was enough to know


async def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": str(2**40)}, stream=Endless())

    async with serve(handler) as base, httpx.AsyncClient() as http:
        with pytest.raises(trio_mcp.auth.TokenRequestError) as caught:
            await _grants.post_form(http, base + "/token", {}, {}, "the token request")
    assert caught.value.error == "invalid_response"
    assert "Content-Length" in str(caught.value)


async def test_small_gzip_bodies_are_decoded() -> None:
    body = b'{"ok": true}'

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "identity"
        return httpx.Response(
            200, headers={"Content-Encoding": "gzip"}, content=gzip.compress(body)
        )

    async with serve(handler) as base, httpx.AsyncClient() as http:
        answer = await _bodies.send(
            http, "GET", base + "/x", error=trio_mcp.auth.AuthDiscoveryError, doing="x"
        )
    assert answer.content == body


# ----------------------------------------------------------------------------- the trace


async def test_the_login_trace_shows_each_step_and_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    agent = BrowserAgent()
    async with hostile(world) as (base, recorder):
        with caplog.at_level(logging.DEBUG, logger="trio_mcp.auth"):
            response = await request_through(world, recorder, user_agent=agent)
    assert response.status_code == 200
    trace = "\n".join(r.getMessage() for r in caplog.records if r.name == "trio_mcp.auth")
    assert f"{base}/.well-known/oauth-protected-resource/a/mcp" in trace  # resource metadata
    assert f"issuer {base}" in trace
    assert f"token {base}/token" in trace and f"authorization {base}/authorize" in trace
    assert "registered dynamically" in trace and "client-1" in trace
    assert "scope" in trace and "got a Bearer token" in trace
    for secret in [*world.tokens, *world.refresh_tokens]:
        assert secret not in trace
    for url in agent.authorization_urls:  # the PKCE challenge and the state
        query = httpx.URL(url).params
        assert query["state"] not in trace and query["code_challenge"] not in trace


class _ChunksTransport(httpx.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes], encoding: str) -> None:
        self.chunks = chunks
        self.encoding = encoding

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = {} if self.encoding == "identity" else {"Content-Encoding": self.encoding}
        return httpx.Response(200, headers=headers, stream=_Chunks(self.chunks))


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        await trio.lowlevel.checkpoint()
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None


@given(
    st.lists(st.binary(max_size=40), max_size=6),
    st.sampled_from(["identity", "gzip", "deflate", "br"]),
    st.booleans(),
)
def test_any_body_is_bounded_or_a_clear_error(
    chunks: list[bytes], encoding: str, compress: bool
) -> None:
    # peer bytes in any encoding: the answer is at most the limit, or the caller's error
    if compress and encoding == "gzip":
        chunks = [gzip.compress(b"".join(chunks) * 4)]
    limit = 64

    async def main() -> None:
        transport = _ChunksTransport(chunks, encoding)
        async with httpx.AsyncClient(transport=transport) as http:
            answer: _bodies.Answer | None = None
            try:
                answer = await _bodies.send(
                    http, "GET", "https://as.example/x", error=trio_mcp.auth.TokenRequestError,
                    doing="x", limit=limit,
                )  # fmt: skip
            except trio_mcp.auth.TokenRequestError as exc:
                failure = exc
            else:
                failure = None
        if failure is not None:
            assert failure.error == "invalid_response"
            return
        assert answer is not None and len(answer.content) <= limit
        if encoding == "identity":
            assert answer.content == b"".join(chunks)

    trio.run(main)


async def test_a_redirect_is_never_followed_even_by_a_following_client() -> None:
    # the token endpoint answers 307 to a plain-http host: the secret must not follow it,
    # even through a caller's client created with follow_redirects=True
    world = World()
    world.raw["/token"] = httpx.Response(307, headers={"Location": "http://as.example/token"})
    async with serve(world.handler) as base:
        world.base = base
        seen: list[httpx.Request] = []

        async def record(request: httpx.Request) -> None:
            seen.append(request)

        async with httpx.AsyncClient(
            follow_redirects=True, event_hooks={"request": [record]}
        ) as http:
            auth = trio_mcp.OAuth(http_client=http, dpop=False, **CONFIDENTIAL)
            async with httpx.AsyncClient(auth=auth) as client:
                with trio.fail_after(30), pytest.raises(trio_mcp.auth.TokenRequestError):
                    await client.get(base + A)
    assert {request.url.host for request in seen} == {"127.0.0.1"}


def test_the_cli_trace_is_safe_for_a_terminal() -> None:
    # `trio-mcp auth login -v`: an issuer (peer input) carrying escape sequences is shown
    # visibly, never interpreted
    from trio_mcp.cli._auth import _TerminalFormatter  # pyright: ignore[reportPrivateUsage]

    record = logging.LogRecord(
        "trio_mcp.auth",
        logging.DEBUG,
        __file__,
        1,
        "issuer %s",
        ("https://x/\x1b]0;pwned\x07",),
        None,
    )
    line = _TerminalFormatter().format(record)
    assert line.startswith("auth: issuer https://x/")
    assert "\x1b" not in line and "\x07" not in line


# ------------------------------------------------------------- whole-request deadline


class Dripping(httpx.AsyncByteStream):
    """A body that sends one byte every 29 seconds, forever (under every read timeout)."""

    async def __aiter__(self) -> Any:
        while True:
            await trio.sleep(29)
            yield b" "

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    "error", [trio_mcp.auth.AuthDiscoveryError, trio_mcp.auth.TokenRequestError]
)
async def test_every_request_has_a_whole_request_deadline(
    error: type[trio_mcp.AuthError], autojump_clock: trio.abc.Clock
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "application/json"}, stream=Dripping())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        start = trio.current_time()
        with trio.fail_after(3600), pytest.raises(error, match="within 60 seconds") as caught:
            await _bodies.send(http, "GET", "https://as.example/x", error=error, doing="x")
        assert trio.current_time() - start == _bodies.REQUEST_DEADLINE
    if isinstance(caught.value, trio_mcp.auth.TokenRequestError):
        assert caught.value.error == "network_error"

"""The browser step through the REAL loopback listener: what may be opened, what ends a login.

``webbrowser.open`` is replaced by a "browser" that runs in the worker thread the listener
opens browsers from: it asks the scripted authorization server (``tests/test_auth.World``)
for the redirect and then makes real HTTP requests (httpx, raw sockets) to the listener on
127.0.0.1. Everything else is the shipped code: ``OAuth`` with its default
:class:`~trio_mcp.auth.LoopbackBrowser`, and for the error mapping a whole ``open_mcp_session``.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._auth import _browser

from .test_auth import AS, SERVER, World, call

Browser = Callable[[str], None]


def _params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def _redirect_of(world: World, authorization_url: str) -> str:
    """What the authorization server redirects the browser to (the approval)."""
    with httpx.Client(transport=httpx.MockTransport(world.handler)) as server:
        return server.get(authorization_url).headers["location"]


def _tampered(location: str, **changes: str) -> str:
    query = _params(location)
    query.update(changes)
    query = {k: v for k, v in query.items() if v != "<drop>"}
    parts = urlsplit(location)
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(query)}"


class FakeBrowser:
    """Replaces ``webbrowser.open``: records URLs and plays ``script`` against them."""

    def __init__(self, world: World, script: Callable[[World, str], None] | None) -> None:
        self.world = world
        self.script = script
        self.opened: list[str] = []
        self.answers: list[tuple[int, str]] = []
        self.finished = threading.Event()

    async def wait(self) -> None:
        """Until the thread finished its script (the flow may end before it reads its page)."""
        assert await trio.to_thread.run_sync(self.finished.wait, 30)

    def get(self, url: str) -> None:
        with httpx.Client(timeout=30) as client:
            response = client.get(url)
        self.answers.append((response.status_code, response.text))

    def __call__(self, url: str, *args: Any, **kwargs: Any) -> bool:
        self.opened.append(url)
        try:
            if self.script is not None:
                self.script(self.world, url)
        finally:
            self.finished.set()
        return True


@asynccontextmanager
async def loopback(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    script: Callable[[FakeBrowser, str], None] | None = None,
    **options: Any,
) -> AsyncGenerator[tuple[httpx.AsyncClient, FakeBrowser]]:
    """An httpx client to SERVER with OAuth and the default LoopbackBrowser."""
    browser = FakeBrowser(world, None)
    if script is not None:
        play = script

        def run(_world: World, url: str) -> None:
            play(browser, url)

        browser.script = run
    monkeypatch.setattr("webbrowser.open", browser)
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client, browser


def _approve(browser: FakeBrowser, url: str) -> None:
    browser.get(_redirect_of(browser.world, url))


# ---------------------------------------------------------------- every outcome is an AuthError


def _deny(browser: FakeBrowser, url: str) -> None:
    location = _redirect_of(browser.world, url)
    browser.get(_tampered(location, error="access_denied", code="<drop>"))


def _wrong_iss(browser: FakeBrowser, url: str) -> None:
    location = _redirect_of(browser.world, url)
    browser.get(_tampered(location, iss="https://evil.example.com"))


@pytest.mark.parametrize(
    ("script", "token_error", "expected", "match"),
    [
        (_deny, None, trio_mcp.auth.AuthorizationDeniedError, "access_denied"),
        (_wrong_iss, None, trio_mcp.auth.AuthorizationDeniedError, "mix-up"),
        (_approve, "invalid_grant", trio_mcp.auth.TokenRequestError, "invalid_grant"),
    ],
)
async def test_login_failures_reach_the_session_caller_as_auth_errors(
    monkeypatch: pytest.MonkeyPatch,
    script: Callable[[FakeBrowser, str], None],
    token_error: str | None,
    expected: type[trio_mcp.AuthError],
    match: str,
) -> None:
    """Denied, mix-up, failed code exchange: the documented AuthError, not TransportError."""
    world = World(token_error=token_error)
    browser = FakeBrowser(world, lambda _world, url: script(browser, url))
    monkeypatch.setattr("webbrowser.open", browser)
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client)  # the default LoopbackBrowser
        client = httpx.AsyncClient(transport=transport)
        params = trio_mcp.StreamableHTTPParameters(SERVER, client=client, auth=oauth)
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                with pytest.raises(expected, match=match) as info:
                    async with trio_mcp.open_mcp_session(nursery, params):
                        pass  # pragma: no cover
    assert type(info.value) is expected
    await browser.wait()
    assert len(browser.opened) == 1
    assert browser.answers and browser.answers[0][0] == 200  # the listener answered the page
    if expected is trio_mcp.auth.AuthorizationDeniedError:
        assert world.count("token") == 0


async def test_denied_login_page_and_error(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    async with loopback(world, monkeypatch, _deny) as (client, browser):
        with pytest.raises(trio_mcp.auth.AuthorizationDeniedError) as info:
            await call(client)
        await browser.wait()
    assert info.value.error == "access_denied"
    assert browser.answers == [(200, _browser._REFUSED_PAGE.decode())]  # pyright: ignore[reportPrivateUsage]


# ---------------------------------------------------------------- what may end the wait


def _wrong_state_first(browser: FakeBrowser, url: str) -> None:
    location = _redirect_of(browser.world, url)
    browser.get(_tampered(location, state="forged"))
    browser.get(_tampered(location, state="<drop>"))
    browser.get(location.replace("/callback", "/favicon.ico"))
    browser.get(location)


async def test_wrong_state_is_ignored_and_the_real_redirect_logs_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    async with loopback(world, monkeypatch, _wrong_state_first) as (client, browser):
        assert (await call(client)).status_code == 200
        await browser.wait()
    statuses = [status for status, _ in browser.answers]
    assert statuses == [400, 400, 404, 200]
    assert "was ignored" in browser.answers[0][1]
    assert world.count("token") == 1


async def test_wrong_state_alone_never_ends_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    done = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def forged_only(browser: FakeBrowser, url: str) -> None:
        browser.get(_tampered(_redirect_of(browser.world, url), state="forged"))
        trio.from_thread.run_sync(done.set, trio_token=token)

    async with loopback(world, monkeypatch, forged_only) as (client, browser):
        async with trio.open_nursery() as nursery:

            async def give_up() -> None:
                await done.wait()
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()

            nursery.start_soon(give_up)
            with trio.fail_after(30):
                await call(client)
            raise AssertionError("a forged redirect ended the login")  # pragma: no cover
    assert [status for status, _ in browser.answers] == [400]
    assert world.count("token") == 0


def _rst(port: int, data: bytes = b"") -> None:
    """Connect, maybe send ``data``, then reset the connection (SO_LINGER 0)."""
    sock = socket.create_connection(("127.0.0.1", port))
    if data:
        sock.sendall(data)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _half(port: int) -> None:
    """Send half a request and close cleanly."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /callback?code=x&sta")


def _resets_first(browser: FakeBrowser, url: str) -> None:
    port = urlsplit(_params(url)["redirect_uri"]).port
    assert port is not None
    _rst(port)  # a browser's aborted prefetch, a port scanner
    _rst(port, b"GET /callback?code=x HTTP/1.1\r\nHo")  # half a request, then a reset
    _half(port)
    _approve(browser, url)


async def test_reset_and_half_requests_do_not_end_the_login(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    async with loopback(world, monkeypatch, _resets_first) as (client, browser):
        with trio.fail_after(30):
            assert (await call(client)).status_code == 200
        await browser.wait()
    assert [status for status, _ in browser.answers] == [200]
    assert world.count("token") == 1


async def test_connection_time_and_size_limits(autojump_clock: trio.abc.Clock) -> None:
    """A silent connection is closed after exactly CONNECTION_TIMEOUT virtual seconds; an
    oversized head gets 431; neither ends the wait."""
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with browser.redirect() as redirect:
        port = urlsplit(redirect.redirect_uri).port or 0
        got: list[str] = []

        async def user() -> None:
            slow = await trio.open_tcp_stream("127.0.0.1", port)
            await slow.send_all(b"GET /callback?state=s")
            start = trio.current_time()
            assert await slow.receive_some() == b""  # closed by the listener
            assert trio.current_time() - start == _browser.CONNECTION_TIMEOUT
            await slow.aclose()
            big = await trio.open_tcp_stream("127.0.0.1", port)
            head = b"GET /callback?state=s&x="  # no end of head within the limit
            await big.send_all(head + b"a" * (_browser.MAX_REQUEST - len(head)))
            answer = b""
            while chunk := await big.receive_some():
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 431 ")
            await big.aclose()
            good = await trio.open_tcp_stream("127.0.0.1", port)
            await good.send_all(b"GET /callback?code=c&state=s HTTP/1.1\r\n\r\n")
            assert (await good.receive_some()).startswith(b"HTTP/1.1 200 OK")
            await good.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user)
            got.append(await redirect.authorize("https://auth.example.com/a?state=s"))
    assert got == [f"{redirect.redirect_uri}?code=c&state=s"]


async def test_idle_connections_do_not_keep_the_redirect_out(
    autojump_clock: trio.abc.Clock,
) -> None:
    """200 idle connections (a port scanner, preconnects, a local process) took every slot
    for CONNECTION_TIMEOUT each, delaying the redirect by minutes; now, with every slot
    taken, the one idle longest (past IDLE_GRACE) is dropped to make room: the redirect is
    served IDLE_GRACE after the flood, exactly."""
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with browser.redirect() as redirect:
        port = urlsplit(redirect.redirect_uri).port or 0
        got: list[str] = []
        served: list[float] = []

        async def user() -> None:
            idle = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(200)]
            start = trio.current_time()
            good = await trio.open_tcp_stream("127.0.0.1", port)
            await good.send_all(b"GET /callback?code=c&state=s HTTP/1.1\r\n\r\n")
            assert (await good.receive_some()).startswith(b"HTTP/1.1 200 OK")
            served.append(trio.current_time() - start)
            await good.aclose()
            for stream in idle:
                await stream.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user)
            got.append(await redirect.authorize("https://auth.example.com/a?state=s"))
    assert got == [f"{redirect.redirect_uri}?code=c&state=s"]
    assert served == [_browser.IDLE_GRACE]


# ---------------------------------------------------------------- what may be opened


BAD_ENDPOINTS = [
    "file:///usr/bin/xcalc",
    "FILE:///usr/bin/xcalc",
    " file:///usr/bin/xcalc",
    "\x1bfile:///usr/bin/xcalc",
    "vscode://evil/command",
    "ms-msdt:/id",
    "javascript:alert(1)",
    "smb://attacker.example/share",
    "https:///no-host",
    "http//missing-colon.example",
]


class OtherEndpoint(World):
    def __init__(self, endpoint: str) -> None:
        super().__init__()
        self.endpoint = endpoint

    def handler(self, request: httpx.Request) -> httpx.Response:
        response = super().handler(request)
        if str(request.url).endswith("/.well-known/oauth-authorization-server"):
            doc = response.json()
            doc["authorization_endpoint"] = self.endpoint
            return httpx.Response(200, json=doc)
        return response


@pytest.mark.parametrize("endpoint", BAD_ENDPOINTS)
@pytest.mark.parametrize("open_browser", [True, False])
async def test_a_non_http_authorization_endpoint_is_never_opened(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    endpoint: str,
    open_browser: bool,
) -> None:
    world = OtherEndpoint(endpoint)
    user_agent = trio_mcp.auth.LoopbackBrowser(open_browser=open_browser)
    async with loopback(world, monkeypatch, _approve, user_agent=user_agent) as (client, b):
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError), trio.fail_after(30):
            await call(client)
    assert b.opened == []
    assert "Open this URL" not in capsys.readouterr().err
    assert world.count("register") == 0  # refused before anything else happened


@pytest.mark.parametrize("endpoint", BAD_ENDPOINTS)
async def test_the_browser_guard_holds_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], endpoint: str
) -> None:
    """LoopbackBrowser refuses by itself, whatever its caller checked before."""
    browser = FakeBrowser(World(), None)
    monkeypatch.setattr("webbrowser.open", browser)
    for open_browser in (True, False):
        async with trio_mcp.auth.LoopbackBrowser(open_browser=open_browser).redirect() as redirect:
            with (
                pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="only http"),
                trio.fail_after(30),
            ):
                await redirect.authorize(f"{endpoint}?response_type=code&state=s")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError):
        _browser._open_browser(endpoint)  # pyright: ignore[reportPrivateUsage]
    assert browser.opened == []
    assert "Open this URL" not in capsys.readouterr().err


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_browser_guard_property(text: str) -> None:
    """Whatever passes the guard is an http(s) URL with a host, by its first characters."""
    for url in (text, "https://" + text, "file://" + text, text + "https://x"):
        try:
            _browser.check_browser_url(url)
        except trio_mcp.auth.AuthDiscoveryError:
            continue
        assert url[:8].lower().startswith(("http://", "https://"))
        parts = urlsplit(url)
        assert parts.scheme in ("http", "https") and parts.hostname
        opened = _browser._for_browser(url)  # pyright: ignore[reportPrivateUsage]
        assert opened.isascii() and opened.isprintable() and " " not in opened


@given(st.binary(max_size=300))
@settings(max_examples=200, deadline=None)
def test_listener_parses_any_bytes_without_raising_or_ending(data: bytes) -> None:
    """Arbitrary bytes on a connection: answered or dropped, never an error, never a login
    (the expected state is not guessable)."""

    async def main() -> None:
        redirect = _browser._LoopbackRedirect(  # pyright: ignore[reportPrivateUsage]
            [], "http://127.0.0.1:1/callback", "/callback", None
        )
        client, server = trio.testing.memory_stream_pair()
        await client.send_all(data)
        await client.send_eof()
        await redirect._serve(server, "the-real-state-value")  # type: ignore[arg-type]  # pyright: ignore[reportPrivateUsage, reportArgumentType]
        assert not redirect._done.is_set()  # pyright: ignore[reportPrivateUsage]

    trio.run(main)


# ---------------------------------------------------------------- printed for a person


async def test_printed_url_shows_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with browser.redirect() as redirect:
        port = urlsplit(redirect.redirect_uri).port or 0

        async def user() -> None:
            await trio.testing.wait_all_tasks_blocked()
            async with httpx.AsyncClient() as http:
                await http.get(f"http://127.0.0.1:{port}/callback?code=c&state=s")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user)
            await redirect.authorize(f"{AS}/authorize/\x1b]0;pwned\x07\u202e?state=s")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "Open this URL in a browser to authorize:" in err
    # the URL a browser would be given (percent-encoded), not a different-looking one
    assert f"{AS}/authorize/%1B]0;pwned%07%E2%80%AE?state=s" in err


@pytest.mark.parametrize(
    "endpoint",
    ["http://as.example\\@127.0.0.1/authorize", "https://as.example@evil.example/authorize"],
)
async def test_an_authorization_url_that_misleads_a_person_is_refused(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``http://as.example\\@127.0.0.1/`` reads as as.example to a person and opens
    127.0.0.1: refused before it is printed or opened."""
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with browser.redirect() as redirect:
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="user name part"):
            await redirect.authorize(f"{endpoint}?state=s")
    assert "Open this URL" not in capsys.readouterr().err


async def test_port_in_use_is_an_auth_error() -> None:
    async with trio_mcp.auth.LoopbackBrowser(open_browser=False).redirect() as first:
        port = urlsplit(first.redirect_uri).port or 0
        with pytest.raises(trio_mcp.AuthError, match="cannot listen"):
            async with trio_mcp.auth.LoopbackBrowser(port=port).redirect():
                pass  # pragma: no cover


def test_device_code_is_printed_through_for_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from trio_mcp._auth._device import print_device_code

    print_device_code(
        trio_mcp.auth.DeviceCode(
            user_code="AB\x1b[2JCD",
            verification_uri="https://auth.example.com/device\x1b]8;;file:///x\x07",
            verification_uri_complete="https://auth.example.com/device?c=\u202eAB",
            expires_in=600,
            interval=5,
        )
    )
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "visit https://auth.example.com/device\\x1b]8;;file:///x\\x07 " in err
    assert "enter the code AB\\x1b[2JCD" in err
    assert "(or open https://auth.example.com/device?c=\\u202eAB)" in err


@pytest.mark.parametrize("uri", ["file:///usr/bin/xcalc", "vscode://evil", "javascript:x"])
def test_device_verification_uri_must_be_http(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    from trio_mcp._auth._device import print_device_code

    code = trio_mcp.auth.DeviceCode(
        user_code="ABCD", verification_uri=uri, verification_uri_complete=None,
        expires_in=600, interval=5,
    )  # fmt: skip
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="verification_uri"):
        print_device_code(code)
    assert capsys.readouterr().err == ""
    # a bad "complete" URI is left out; the plain one is still shown
    good = trio_mcp.auth.DeviceCode(
        user_code="ABCD", verification_uri="https://a.example/device",
        verification_uri_complete=uri, expires_in=600, interval=5,
    )  # fmt: skip
    print_device_code(good)
    err = capsys.readouterr().err
    assert "visit https://a.example/device and enter the code ABCD" in err
    assert uri not in err


async def test_the_wait_is_bounded_by_the_callers_scope(autojump_clock: trio.abc.Clock) -> None:
    """No callback: the caller's fail_after ends the wait at exactly its deadline, the
    listener (and every task of it) is gone afterwards."""
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    start = trio.current_time()
    ports: list[int] = []

    async def login() -> None:
        with trio.fail_after(300):
            async with browser.redirect() as redirect:
                ports.append(urlsplit(redirect.redirect_uri).port or 0)
                await redirect.authorize("https://auth.example.com/authorize?state=s")

    with pytest.raises(trio.TooSlowError):
        await login()
    assert trio.current_time() - start == 300
    with pytest.raises(OSError):
        await trio.open_tcp_stream("127.0.0.1", ports[0])


async def test_junk_racing_the_real_redirect() -> None:
    """Forty connections (resets, half requests, wrong states) at the same time as the real
    redirect: the real one ends the wait, nothing else does, nothing raises."""
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    answers: list[bytes] = []
    async with browser.redirect() as redirect:
        port = urlsplit(redirect.redirect_uri).port or 0

        async def junk(i: int) -> None:
            if i % 4 == 0:
                await trio.to_thread.run_sync(_rst, port)
            elif i % 4 == 1:
                await trio.to_thread.run_sync(_rst, port, b"GET /callback?state=s")
            else:
                try:  # once the login ended, the listener drops what is left
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    request = b"GET /callback?code=c&state=wrong HTTP/1.1\r\n\r\n"
                    await stream.send_all(request if i % 4 == 2 else request[:30])
                    if i % 4 == 2:
                        answers.append(await stream.receive_some())
                    await stream.aclose()
                except (OSError, trio.BrokenResourceError):
                    pass

        async def real() -> None:
            await trio.testing.wait_all_tasks_blocked()
            async with httpx.AsyncClient() as http:
                response = await http.get(f"http://127.0.0.1:{port}/callback?code=ok&state=s")
            assert response.status_code == 200

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for i in range(40):
                    nursery.start_soon(junk, i)
                nursery.start_soon(real)
                callback = await redirect.authorize("https://auth.example.com/a?state=s")
    assert callback == f"{redirect.redirect_uri}?code=ok&state=s"
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 400 ") for answer in answers)


async def test_an_error_in_the_block_comes_out_bare() -> None:
    """No nursery around the yield: what the flow raises inside ``redirect()`` is itself."""

    async def flow() -> None:
        async with trio_mcp.auth.LoopbackBrowser(open_browser=False).redirect():
            raise trio_mcp.auth.TokenRequestError("refused", error="invalid_grant")

    with pytest.raises(trio_mcp.auth.TokenRequestError) as info:
        await flow()
    assert type(info.value) is trio_mcp.auth.TokenRequestError

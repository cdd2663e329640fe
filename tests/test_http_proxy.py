"""The proxies of the environment, through a real forwarding proxy on loopback.

``RecordingProxy`` is a small HTTP proxy written here with trio and h11: absolute-form
requests (``POST http://host/mcp``) are forwarded request by request, ``CONNECT`` opens a
tunnel (for ``https://``); it records every request that passes, and resolves the made-up
host ``mcp.internal.test`` to the test server, so a client that bypasses the proxy cannot
reach that server at all (as behind a mandatory proxy). The MCP server is the scripted h11
server of tests/test_http_races.py (both eras).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx
import pytest
import trio
import trustme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._transports._http_base import core_for
from trio_mcp._transports._http_client import HTTPOptions

from .test_http_races import _serve

HIDDEN = "mcp.internal.test"  # only the proxy knows where this is
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)


async def _next_event(stream: trio.abc.Stream, conn: h11.Connection) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(65536))


async def _pipe(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    with trio.CancelScope(shield=True):
        await trio.aclose_forcefully(sink)


class RecordingProxy:
    """A forwarding HTTP proxy that records ``(method, target)`` of what passes through."""

    def __init__(self, hosts: dict[str, int]) -> None:
        self.hosts = hosts  # made-up host name -> port on 127.0.0.1
        self.seen: list[tuple[str, str]] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _open(self, host: str, port: int) -> trio.SocketStream:
        if host in self.hosts:
            host, port = "127.0.0.1", self.hosts[host]
        return await trio.open_tcp_stream(host, port)

    async def handle(self, client: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await _next_event(client, conn)
                if not isinstance(request, h11.Request):
                    return
                method, target = request.method.decode(), request.target.decode()
                self.seen.append((method, target))
                if method == "CONNECT":
                    await self._tunnel(client, conn, target)
                    return
                await self._forward(client, conn, request)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, OSError):
            return
        finally:
            await trio.aclose_forcefully(client)

    async def _tunnel(self, client: trio.SocketStream, conn: h11.Connection, target: str) -> None:
        host, _, port = target.rpartition(":")
        while not isinstance(await _next_event(client, conn), h11.EndOfMessage):
            pass
        upstream = await self._open(host, int(port))
        await client.send_all(conn.send(h11.Response(status_code=200, headers=[])))
        early, _ = conn.trailing_data
        if early:
            await upstream.send_all(early)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pipe, client, upstream)
            nursery.start_soon(_pipe, upstream, client)

    async def _forward(
        self, client: trio.SocketStream, conn: h11.Connection, request: h11.Request
    ) -> None:
        url = urlsplit(request.target.decode())
        assert url.scheme == "http" and url.hostname is not None, "not absolute-form"
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        upstream = await self._open(url.hostname, url.port or 80)
        try:
            up = h11.Connection(h11.CLIENT)
            headers = [(k, v) for k, v in request.headers if not k.startswith(b"proxy-")]
            await upstream.send_all(
                up.send(h11.Request(method=request.method, target=path, headers=headers))
            )
            while True:  # the request's body
                event = await _next_event(client, conn)
                await upstream.send_all(up.send(event) or b"")
                if isinstance(event, h11.EndOfMessage):
                    break
            while True:  # the response, streamed event by event (SSE included)
                event = await _next_event(upstream, up)
                if isinstance(event, h11.Response):
                    event = h11.Response(
                        status_code=event.status_code, headers=event.headers, reason=event.reason
                    )
                await client.send_all(conn.send(event) or b"")
                if isinstance(event, h11.EndOfMessage):
                    return
        finally:
            await trio.aclose_forcefully(upstream)


@asynccontextmanager
async def mcp_server(
    era: str, tls: ssl.SSLContext | None = None
) -> AsyncGenerator[tuple[int, RecordingProxy]]:
    """An MCP server on loopback and a proxy that knows it as ``mcp.internal.test``."""

    async def serve(stream: trio.SocketStream) -> None:
        if tls is not None:
            wrapped = trio.SSLStream(stream, tls, server_side=True)
            try:
                await wrapped.do_handshake()
            except trio.BrokenResourceError:
                return
            await _serve(era, wrapped)  # type: ignore[arg-type]
        else:
            await _serve(era, stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        proxy = RecordingProxy({HIDDEN: port})
        proxies = await nursery.start(partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1"))
        proxy.port = proxies[0].socket.getsockname()[1]
        yield port, proxy
        nursery.cancel_scope.cancel()


async def call(url: str | trio_mcp.StreamableHTTPParameters, **options: Any) -> str:
    target = url if not isinstance(url, str) else trio_mcp.StreamableHTTPParameters(url, **options)
    async with trio_mcp.open_mcp_session(target) as session:
        result = await session.call_tool("anything", {})
        text: str = result.content[0].text  # type: ignore[union-attr]
        return text


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
async def test_http_goes_through_the_proxy_of_the_environment(
    era: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mcp_server(era) as (port, proxy):
        monkeypatch.setenv(variable, proxy.url)
        url = f"http://{HIDDEN}:{port}/mcp"  # not reachable but through the proxy
        with trio.fail_after(10):
            assert await call(url) == "done"
    assert proxy.seen and all(target == url for _, target in proxy.seen)
    assert {"POST"} <= {method for method, _ in proxy.seen}


async def test_https_goes_through_a_connect_tunnel(monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert(HIDDEN).configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
    async with mcp_server("modern", tls=server_context) as (port, proxy):
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        url = f"https://{HIDDEN}:{port}/mcp"
        with trio.fail_after(10):
            assert await call(url, ssl_context=client_context) == "done"
    assert proxy.seen and set(proxy.seen) == {("CONNECT", f"{HIDDEN}:{port}")}


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "*", "localhost,127.0.0.1", "::1,127.0.0.1"])
async def test_no_proxy_goes_direct_to_trio_mcps_pool(
    no_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mcp_server("modern") as (port, proxy):
        monkeypatch.setenv("ALL_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        url = f"http://127.0.0.1:{port}/mcp"
        async with trio.open_nursery() as nursery:
            assert core_for(HTTPOptions(url), nursery).uses_pool_directly
        with trio.fail_after(10):
            assert await call(url) == "done"
    assert proxy.seen == []


async def test_a_proxy_for_another_scheme_leaves_this_one_direct(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with mcp_server("modern") as (port, proxy):
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)  # only https:// is proxied
        with trio.fail_after(10):
            assert await call(f"http://127.0.0.1:{port}/mcp") == "done"
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("no_proxy", "url"),
    [
        ("internal.test", "http://mcp.internal.test/mcp"),  # a domain and its subdomains
        ("internal.test", "http://internal.test/mcp"),
        ("internal.test", "http://xinternal.test/mcp"),  # not a subdomain: proxied
        (".internal.test", "http://internal.test/mcp"),  # a leading dot: subdomains only
        (".internal.test", "http://mcp.internal.test/mcp"),
        ("mcp.internal.test:8080", "http://mcp.internal.test:8080/mcp"),  # host and port
        ("mcp.internal.test:8080", "http://mcp.internal.test:9090/mcp"),
        ("10.0.0.1", "http://10.0.0.1/mcp"),
        ("10.0.0.0/8", "http://10.1.2.3/mcp"),  # httpx: a CIDR names its first address only
        ("10.0.0.0/8", "http://10.0.0.0/mcp"),
        ("::1", "http://[::1]:8000/mcp"),
        ("localhost", "http://localhost:8000/mcp"),
        ("http://mcp.internal.test", "http://mcp.internal.test/mcp"),  # a URL pattern
        ("http://mcp.internal.test", "https://mcp.internal.test/mcp"),
        ("other.test, internal.test", "http://mcp.internal.test/mcp"),
        ("", "http://mcp.internal.test/mcp"),
    ],
)
def test_no_proxy_forms_are_read_as_httpx_reads_them(
    no_proxy: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    reference = httpx.AsyncClient(trust_env=True)  # httpx's own reading of the environment
    httpx_direct = reference._transport_for_url(httpx.URL(url)) is reference._transport

    async def main() -> bool:
        async with trio.open_nursery() as nursery:
            core = core_for(HTTPOptions(url), nursery)
            direct = core.uses_pool_directly
            await core.aclose(None)
            return direct

    assert trio.run(main) is httpx_direct


async def test_a_socks_proxy_without_its_extra_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    try:
        import socksio  # noqa: F401  # pyright: ignore[reportMissingImports, reportUnusedImport]
    except ImportError:
        pass
    else:
        pytest.skip("socksio is installed")
    monkeypatch.setenv("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080")
    async with trio.open_nursery() as nursery:
        with pytest.raises(
            trio_mcp.TransportError, match=r"pip install 'trio-mcp\[socks\]'"
        ) as caught:
            core_for(HTTPOptions("http://127.0.0.1:1/mcp"), nursery)
    assert "secret" not in str(caught.value)
    assert isinstance(caught.value.__cause__, ImportError)


async def test_a_proxy_that_refuses_is_a_transport_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(stream: trio.SocketStream) -> None:
        await stream.send_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, refuse, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
        with pytest.raises(trio_mcp.TransportError, match="proxy"):
            await call(f"https://{HIDDEN}/mcp")
        nursery.cancel_scope.cancel()


async def test_an_httpx_that_reads_the_environment_otherwise_still_gets_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx._utils

    monkeypatch.delattr(httpx._utils, "get_environment_proxies")
    async with mcp_server("modern") as (port, proxy):
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        url = f"http://{HIDDEN}:{port}/mcp"
        with trio.fail_after(10):
            assert await call(url) == "done"
    assert proxy.seen and all(target == url for _, target in proxy.seen)


async def test_ssl_context_for_an_https_target() -> None:
    """``ssl_context=`` works for ``https://`` as for ``wss://`` (it was a TypeError)."""
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
    async with mcp_server("legacy", tls=server_context) as (port, proxy):
        url = f"https://127.0.0.1:{port}/mcp"
        with trio.fail_after(10):
            assert await call(url, ssl_context=client_context) == "done"
            with pytest.raises(trio_mcp.TransportError, match="unable to get local issuer"):
                await call(url)  # the system's CAs do not know this one
            params = trio_mcp.StreamableHTTPParameters(url, ssl_context=client_context)
            assert await call(params) == "done"
    assert proxy.seen == []


_LABELS = st.sampled_from(["mcp", "internal", "test", "example", "x", "localhost"])
_HOSTS = st.one_of(
    st.lists(_LABELS, min_size=1, max_size=3).map(".".join),
    st.sampled_from(["127.0.0.1", "10.0.0.1", "10.0.0.0", "::1", "[::1]"]),
)


@st.composite
def _no_proxy_entry(draw: st.DrawFn) -> str:
    host = draw(_HOSTS)
    form = draw(st.sampled_from(["plain", "dot", "port", "url", "cidr", "star-ish"]))
    if form == "dot":
        return "." + host
    if form == "port":
        return f"{host}:{draw(st.sampled_from([80, 8080]))}"
    if form == "url":
        return f"{draw(st.sampled_from(['http', 'https', 'all']))}://{host}"
    if form == "cidr":
        return f"{host}/8"
    if form == "star-ish":
        return draw(st.sampled_from(["*", " ", ""]))
    return host


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.lists(_no_proxy_entry(), max_size=4),
    scheme=st.sampled_from(["http", "https"]),
    host=_HOSTS,
    port=st.sampled_from(["", ":80", ":8080"]),
    proxies=st.sampled_from([("ALL_PROXY",), ("HTTP_PROXY",), ("HTTPS_PROXY",), ()]),
)
def test_any_no_proxy_is_decided_as_httpx_decides_it(
    entries: list[str],
    scheme: str,
    host: str,
    port: str,
    proxies: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whichever environment: trio_mcp's pool serves exactly the URLs httpx would not proxy."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    url = f"{scheme}://{host}{port}/mcp"
    with monkeypatch.context() as patch:
        for name in proxies:
            patch.setenv(name, "http://127.0.0.1:9")
        patch.setenv("NO_PROXY", ",".join(entries))
        try:
            reference = httpx.AsyncClient(trust_env=True, verify=False)  # (no CA bundle loaded)
        except httpx.InvalidURL:  # httpx refuses this NO_PROXY: trio_mcp says so, its own way
            reference = None
        httpx_direct = (
            reference is not None
            and reference._transport_for_url(httpx.URL(url)) is reference._transport
        )

        async def main() -> bool:
            async with trio.open_nursery() as nursery:
                if reference is None:
                    with pytest.raises(trio_mcp.TransportError, match="NO_PROXY"):
                        core_for(HTTPOptions(url), nursery)
                    return False
                core = core_for(HTTPOptions(url), nursery)
                direct = core.uses_pool_directly
                await core.aclose(None)
                return direct

        assert trio.run(main) is httpx_direct

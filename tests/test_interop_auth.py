"""OAuth interop: a real authorization server protecting a real MCP server, on loopback.

* ``oidc-provider`` (npm, a certified OpenID provider) configured by
  ``tests/servers/oidc_provider.mjs``: Dynamic Client Registration, a pre-registered
  confidential client, PKCE required, refresh tokens for ``offline_access``, resource
  indicators with JWT access tokens audience-bound to the MCP server, device flow, DPoP;
* ``tests/servers/auth_sdk_server.py``: the official ``mcp`` SDK's server as a resource
  server, with a ``TokenVerifier`` that checks the JWTs against the provider's JWKS
  (signature, ``iss``, ``aud`` = its own URL, expiry, scope).

The browser step is a :class:`FormUserAgent`: it does what a user's browser does with
oidc-provider's development interactions, in plain HTTP (httpx with a cookie jar): follow
the authorization request's redirects, post the login form, post the consent form, follow
the redirects to the loopback callback (a real :class:`~trio_mcp.auth.LoopbackBrowser`
listener).
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast
from unittest.mock import ANY
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest
import trio

import trio_mcp

from .interop_peers import (
    OIDC_SVC_CLIENT,
    open_auth_sdk_server,
    open_oidc_provider,
    skip_unless_oidc_provider,
    terminate_process,
)

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.interop

# oidc-provider advertises DPoP but the SDK server challenges with Bearer only, so OAuth()'s
# dpop="auto" gets Bearer tokens (the first test proves it); the DPoP test asks for DPoP
# (auth_sdk_server.py checks the proofs).

_FORM_ACTION = re.compile(r'<form(?=[^>]*method="post")[^>]*action="([^"]+)"', re.IGNORECASE)


@pytest.fixture(autouse=True)
def _peers() -> None:  # pyright: ignore[reportUnusedFunction]
    skip_unless_oidc_provider()


async def complete_in_browser(
    authorization_url: str, *, login: str = "alice", max_steps: int = 20
) -> str:
    """Act as the user's browser on oidc-provider's development interactions.

    Follows redirects, answers the login form (any user name and password) and the
    consent form, until a redirect leaves the provider's origin (the client's redirect
    URI), then GETs that URL (the client's loopback listener) and returns it.
    """
    origin = urlsplit(authorization_url)[:2]
    url, method, form = authorization_url, "GET", None
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        for _ in range(max_steps):
            if urlsplit(url)[:2] != origin:
                await browser.get(url)  # the redirect to the loopback callback
                return url
            response = await browser.request(method, url, data=form)
            method, form = "GET", None
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                continue
            assert response.status_code == 200, (response.status_code, response.text[:500])
            page = response.text
            action = _FORM_ACTION.search(page)
            assert action is not None, page[:500]
            method, url = "POST", urljoin(url, html.unescape(action.group(1)))
            if 'name="prompt" value="login"' in page:
                form = {"prompt": "login", "login": login, "password": "any"}
            elif 'name="prompt" value="consent"' in page:
                form = {"prompt": "consent"}
            else:
                raise AssertionError(f"unexpected page: {page[:500]}")
    raise AssertionError("the authorization did not reach the redirect URI")


class FormUserAgent:
    """A :class:`~trio_mcp.auth.UserAgent` whose 'browser' is :func:`complete_in_browser`.

    The redirect endpoint is a real :class:`~trio_mcp.auth.LoopbackBrowser` listener on
    127.0.0.1 (with ``open_browser=False``, it prints the URL; we follow it).

    Attributes:
        authorization_urls: Every authorization request it was sent to.
    """

    def __init__(self, login: str = "alice") -> None:
        self.login = login
        self.authorization_urls: list[str] = []

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[trio_mcp.auth.Redirect]:
        async with trio_mcp.auth.LoopbackBrowser(open_browser=False).redirect() as inner:
            yield _FormRedirect(inner, self)


class _FormRedirect:
    def __init__(self, inner: trio_mcp.auth.Redirect, agent: FormUserAgent) -> None:
        self._inner = inner
        self._agent = agent

    @property
    def redirect_uri(self) -> str:
        return self._inner.redirect_uri

    async def authorize(self, authorization_url: str) -> str:
        self._agent.authorization_urls.append(authorization_url)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: complete_in_browser(authorization_url, login=self._agent.login)
            )
            return await self._inner.authorize(authorization_url)


class TokenEndpointLog:
    """An ``httpx.AsyncClient`` for ``OAuth(http_client=...)`` that records AS requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self.client = httpx.AsyncClient(
            timeout=30, event_hooks={"request": [self._record]}, follow_redirects=False
        )

    async def _record(self, request: httpx.Request) -> None:
        form = parse_qs(request.content.decode()) if request.method == "POST" else {}
        self.requests.append((request.method, str(request.url), form))

    def grants(self) -> list[str]:
        """The ``grant_type`` of every token request, in order."""
        return [form["grant_type"][0] for _, _, form in self.requests if "grant_type" in form]

    def posted_to(self, suffix: str) -> list[dict[str, list[str]]]:
        return [form for _, url, form in self.requests if url.endswith(suffix)]


class CountingTransport(httpx.AsyncBaseTransport):
    """Wraps the MCP session's transport; counts requests and 401 answers."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0
        self.unauthorized = 0
        self.authorizations: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        self.authorizations.append(request.headers.get("authorization"))
        response = await self.inner.handle_async_request(request)
        if response.status_code == 401:
            self.unauthorized += 1
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _tool_json(result: trio_mcp.CallToolResult) -> Any:
    assert not result.is_error, result
    structured = cast("dict[str, Any] | None", result.structured_content)
    if structured is not None:
        return structured.get("result", structured)
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    return json.loads(block.text)


def _text(result: trio_mcp.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    return block.text


async def test_authorization_code_pkce_dcr_end_to_end() -> None:
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        agent = FormUserAgent(login="alice")
        log = TokenEndpointLog()
        store = trio_mcp.auth.MemoryTokenStore()
        auth = trio_mcp.OAuth(user_agent=agent, store=store, http_client=log.client)
        async with log.client:
            with trio.fail_after(60):
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ) as session:
                    assert _text(await session.call_tool("echo", {"text": "hi"})) == "hi"
                    who = _tool_json(await session.call_tool("whoami", {}))
        # DCR: one registration at the provider, as a public native client
        (registration,) = [r for r in log.requests if r[1].endswith("/reg")]
        assert registration[1] == f"{provider.url}/reg"
        client = await store.get_client(provider.url)
        assert client is not None and client.auth_method == "none"
        assert who == {
            "sub": "alice",
            "client_id": client.client_id,
            "scopes": ["mcp:tools"],
            "dpop": False,
        }
        # the authorization request: PKCE S256, state, the resource indicator, consent for
        # the refresh token
        (authorization_url,) = agent.authorization_urls
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
        assert query["resource"] == server.url
        assert query["scope"] == "mcp:tools offline_access"
        assert query["prompt"] == "consent" and query["state"]
        (token_form,) = log.posted_to("/token")
        assert token_form["grant_type"] == ["authorization_code"]
        assert token_form["resource"] == [server.url] and token_form["code_verifier"]
        # the token: stored under (issuer, resource, client id), with a refresh token
        stored = await store.get_token(provider.url, server.url, client.client_id)
        assert stored is not None and stored.refresh_token is not None
        assert "TRIO_MCP_TOKEN ok" in server.output()


async def test_refresh_on_expiry_against_the_real_server() -> None:
    # 2-second access tokens; the client refreshes when they expire (real time: the
    # provider and the server check expiry against the wall clock)
    async with open_oidc_provider(access_token_ttl=2) as provider:
        async with open_auth_sdk_server(provider.url) as server:
            log = TokenEndpointLog()
            store = trio_mcp.auth.MemoryTokenStore()
            auth = trio_mcp.OAuth(
                user_agent=FormUserAgent(),
                store=store,
                http_client=log.client,
                refresh_margin=0,
                dpop=False,
            )
            async with log.client:
                with trio.fail_after(60):
                    async with trio_mcp.open_mcp_session(
                        trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                    ) as session:
                        assert _text(await session.call_tool("echo", {"text": "1"})) == "1"
                        client = await store.get_client(provider.url)
                        assert client is not None
                        first = await store.get_token(provider.url, server.url, client.client_id)
                        assert first is not None and first.expires_at is not None
                        await trio.sleep(2.2)  # let the token expire (real AS, real clock)
                        assert _text(await session.call_tool("echo", {"text": "2"})) == "2"
            second = await store.get_token(provider.url, server.url, client.client_id)
            assert log.grants() == ["authorization_code", "refresh_token"]
            assert second is not None and second.access_token != first.access_token
            # rotation: the provider issued a new refresh token, which replaced the old one
            assert second.refresh_token not in (None, first.refresh_token)
            (refresh_form,) = [f for f in log.posted_to("/token") if "refresh_token" in f]
            assert refresh_form["resource"] == [server.url]


async def test_client_credentials() -> None:
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        client_id, secret = OIDC_SVC_CLIENT
        log = TokenEndpointLog()
        auth = trio_mcp.OAuth(
            grant="client_credentials",
            client_id=client_id,
            client_secret=secret,
            http_client=log.client,
            dpop=False,
        )
        async with log.client:
            with trio.fail_after(60):
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ) as session:
                    who = _tool_json(await session.call_tool("whoami", {}))
        assert who == {"sub": "svc", "client_id": "svc", "scopes": ["mcp:tools"], "dpop": False}
        assert log.grants() == ["client_credentials"]
        assert not log.posted_to("/reg")


async def test_client_credentials_wrong_secret_is_a_token_request_error() -> None:
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        auth = trio_mcp.OAuth(
            grant="client_credentials", client_id="svc", client_secret="nope", dpop=False
        )
        with trio.fail_after(60), pytest.raises(trio_mcp.auth.TokenRequestError) as caught:
            async with trio_mcp.open_mcp_session(
                trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
            ):
                pass
        assert caught.value.error == "invalid_client"


async def test_wrong_issuer_in_the_metadata_is_refused() -> None:
    # the provider is reached at 127.0.0.1 but announces itself as localhost: RFC 8414 §3.3
    # says the client must not use this metadata
    async with open_oidc_provider(issuer="http://localhost:{port}") as provider:
        async with open_auth_sdk_server(provider.url) as server:
            agent = FormUserAgent()
            auth = trio_mcp.OAuth(user_agent=agent, dpop=False)
            with trio.fail_after(60), pytest.raises(trio_mcp.auth.AuthDiscoveryError) as caught:
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ):
                    pass
            assert "localhost" in str(caught.value)
            assert agent.authorization_urls == []  # nothing was authorized


async def test_wrong_resource_in_the_metadata_is_refused() -> None:
    # the server's protected-resource metadata is for another resource than its URL
    async with open_oidc_provider() as provider:
        async with open_auth_sdk_server(
            provider.url, resource="http://127.0.0.1:{port}/other"
        ) as server:
            agent = FormUserAgent()
            auth = trio_mcp.OAuth(user_agent=agent, dpop=False)
            with trio.fail_after(60), pytest.raises(trio_mcp.auth.AuthDiscoveryError) as caught:
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ):
                    pass
            assert "does not cover" in str(caught.value)
            assert agent.authorization_urls == []


async def test_a_token_for_one_server_is_never_sent_to_another() -> None:
    # two servers behind the same AS, one OAuth and one store: server B gets its own token,
    # never A's (tokens are keyed by resource, and audience-bound by the AS)
    async with open_oidc_provider() as provider:
        async with (
            open_auth_sdk_server(provider.url) as server_a,
            open_auth_sdk_server(provider.url) as server_b,
        ):
            store = trio_mcp.auth.MemoryTokenStore()
            log = TokenEndpointLog()
            token_a: str | None = None
            async with log.client:
                for server in (server_a, server_b):
                    transport = CountingTransport()
                    auth = trio_mcp.OAuth(
                        user_agent=FormUserAgent(), store=store, http_client=log.client, dpop=False
                    )
                    with trio.fail_after(60):
                        async with (
                            httpx.AsyncClient(transport=transport) as client,
                            trio_mcp.open_mcp_session(
                                trio_mcp.StreamableHTTPParameters(
                                    server.url, auth=auth, client=client
                                )
                            ) as s,
                        ):
                            await s.call_tool("echo", {"text": "x"})
                    if server is server_a:
                        token_a = transport.authorizations[-1]
                    else:
                        assert token_a not in transport.authorizations
            resources = [form["resource"][0] for form in log.posted_to("/token")]
            assert resources == [server_a.url, server_b.url]


def _bearer_audience(authorization: str | None) -> str | None:
    """The ``aud`` of the JWT access token in an ``Authorization: Bearer`` header."""
    if authorization is None:
        return None
    payload = authorization.removeprefix("Bearer ").split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    aud = claims["aud"]
    return str(aud if isinstance(aud, str) else aud[0])


async def test_one_provider_for_two_servers_at_once() -> None:
    # one OAuth (one store) reaching two protected servers of the same AS, the sessions
    # open at the same time: each server sees only the tokens oidc-provider issued for it
    # (their JWT audience), and switching between them does not log in again
    async with open_oidc_provider() as provider:
        async with (
            open_auth_sdk_server(provider.url) as server_a,
            open_auth_sdk_server(provider.url) as server_b,
        ):
            agent = FormUserAgent()
            log = TokenEndpointLog()
            auth = trio_mcp.OAuth(user_agent=agent, http_client=log.client, dpop=False)
            transports = {server_a.url: CountingTransport(), server_b.url: CountingTransport()}
            async with log.client, httpx.AsyncClient(transport=transports[server_a.url]) as ca:
                async with httpx.AsyncClient(transport=transports[server_b.url]) as cb:
                    with trio.fail_after(90):
                        async with (
                            trio_mcp.open_mcp_session(
                                trio_mcp.StreamableHTTPParameters(
                                    server_a.url, auth=auth, client=ca
                                )
                            ) as a,
                            trio_mcp.open_mcp_session(
                                trio_mcp.StreamableHTTPParameters(
                                    server_b.url, auth=auth, client=cb
                                )
                            ) as b,
                        ):
                            for session in (a, b, a, b, a, b):
                                assert _text(await session.call_tool("echo", {"text": "x"}))
                            who_a = _tool_json(await a.call_tool("whoami", {}))
                            who_b = _tool_json(await b.call_tool("whoami", {}))
            for url, transport in transports.items():
                audiences = {_bearer_audience(h) for h in transport.authorizations if h}
                assert audiences == {url}, (url, audiences)
            assert len(agent.authorization_urls) == 2  # one login per server, no more
            assert log.grants() == ["authorization_code", "authorization_code"]
            assert who_a["sub"] == who_b["sub"] == "alice"
            assert "TRIO_MCP_TOKEN ok" in server_a.output()
            assert "TRIO_MCP_TOKEN ok" in server_b.output()


@pytest.mark.parametrize("where", ["parameters", "group"])
async def test_a_server_group_sharing_one_provider(where: str) -> None:
    # one OAuth(), on every member's parameters object or given once to the group for its
    # plain URLs: shared by the group's members, both start, each with its own token
    async with open_oidc_provider() as provider:
        async with (
            open_auth_sdk_server(provider.url) as server_a,
            open_auth_sdk_server(provider.url) as server_b,
        ):
            agent = FormUserAgent()
            log = TokenEndpointLog()
            auth = trio_mcp.OAuth(user_agent=agent, http_client=log.client, dpop=False)
            urls = {"a": server_a.url, "b": server_b.url}
            servers: dict[str, Any] = (
                {
                    name: trio_mcp.StreamableHTTPParameters(url, auth=auth)
                    for name, url in urls.items()
                }
                if where == "parameters"
                else dict(urls)
            )
            group_auth = auth if where == "group" else None
            async with log.client:
                with trio.fail_after(90):
                    async with trio_mcp.open_server_group(servers, auth=group_auth) as group:
                        states = {n: s.state for n, s in group.statuses().items()}
                        assert states == {
                            "a": trio_mcp.groups.ServerState.RUNNING,
                            "b": trio_mcp.groups.ServerState.RUNNING,
                        }, group.statuses()
                        for name in ("a", "b", "a", "b"):
                            session = group.session(name)
                            assert _text(await session.call_tool("echo", {"text": name})) == name
            assert len(agent.authorization_urls) == 2
            resources = sorted(form["resource"][0] for form in log.posted_to("/token"))
            assert resources == sorted([server_a.url, server_b.url])


async def test_dpop_bound_tokens_when_asked() -> None:
    # oidc-provider advertises dpop_signing_alg_values_supported: OAuth(dpop=True) binds the
    # token to a key (token_type DPoP, cnf.jkt); the server checks each request's proof
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        store = trio_mcp.auth.MemoryTokenStore()
        log = TokenEndpointLog()
        auth = trio_mcp.OAuth(
            user_agent=FormUserAgent(), store=store, http_client=log.client, dpop=True
        )
        async with log.client:
            with trio.fail_after(60):
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ) as session:
                    who = _tool_json(await session.call_tool("whoami", {}))
                    await session.call_tool("echo", {"text": "again"})
        assert who["dpop"] is True
        client = await store.get_client(provider.url)
        assert client is not None
        stored = await store.get_token(provider.url, server.url, client.client_id)
        assert stored is not None and stored.token_type == "DPoP" and stored.dpop_jwk
        output = server.output()
        assert output.count("TRIO_MCP_DPOP ok") >= 2 and "TRIO_MCP_DPOP Invalid" not in output


# -------------------------------------------------------------------- the trio-mcp CLI


async def _cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``python -m trio_mcp.cli ARGS`` to completion: (exit status, stdout, stderr)."""
    result = await trio.run_process(
        [sys.executable, "-m", "trio_mcp.cli", *args],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_cli_auth_login_status_reuse_logout(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        # `auth login --no-browser` prints the authorization URL; we are the browser
        argv = [sys.executable, "-m", "trio_mcp.cli", "auth", "login", "-v", "--no-browser"]
        with trio.fail_after(60):
            process = await trio.lowlevel.open_process(
                [*argv, "--json", "--timeout", "60", server.url],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert process.stdout is not None and process.stderr is not None
            try:
                seen = b""
                while (found := re.search(rb"\s(http://\S+/auth\?\S+)", seen)) is None:
                    chunk = await process.stderr.receive_some()
                    assert chunk, seen.decode()
                    seen += chunk
                await complete_in_browser(found.group(1).decode(), login="carol")
                out = b""
                while chunk := await process.stdout.receive_some():
                    out += chunk
                while chunk := await process.stderr.receive_some():
                    seen += chunk
                assert await process.wait() == 0, seen.decode()
            finally:
                await terminate_process(process)
                await process.stdout.aclose()
                await process.stderr.aclose()
        assert json.loads(out) == {"url": server.url, "server": ANY, "loggedIn": True}
        # -v: the login trace on stderr, each step, no secret
        trace = seen.decode()
        assert f"auth: {server.url}: resource {server.url}, issuer {provider.url}" in trace
        assert "registered dynamically" in trace and "got a Bearer token" in trace
        secrets = json.loads(
            (tmp_path / "config" / "trio-mcp" / "tokens.json").read_text(encoding="utf-8")
        )
        for token in secrets["tokens"].values():
            assert token["access_token"] not in trace and token["refresh_token"] not in trace
        store = tmp_path / "config" / "trio-mcp" / "tokens.json"
        assert oct(store.stat().st_mode & 0o777) == "0o600"

        status, out_text, _ = await _cli("auth", "status", "--json", server.url, env=env)
        assert status == 0
        report = json.loads(out_text)
        assert report["loggedIn"] is True
        assert [t["issuer"] for t in report["tokens"]] == [provider.url]
        assert report["tokens"][0]["refreshable"] is True

        # every other command reuses the stored token (headless: no browser, no 401 first)
        served_before = server.output().count("TRIO_MCP_TOKEN ok")
        status, out_text, err = await _cli("--json", server.url, "call", "whoami", env=env)
        assert status == 0, err
        assert '"sub": "carol"' in out_text or '"sub":"carol"' in out_text
        assert server.output().count("TRIO_MCP_TOKEN ok") > served_before

        status, out_text, _ = await _cli("auth", "logout", "--json", server.url, env=env)
        assert (status, json.loads(out_text)) == (0, {"url": server.url, "removed": 1})
        status, _, err = await _cli("--json", server.url, "call", "whoami", env=env)
        assert status == 4, err  # EXIT_AUTH: login required
        assert "LoginRequiredError" in err or "login" in err.lower()


_HIDDEN = re.compile(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', re.I)


async def complete_device_code(code: trio_mcp.auth.DeviceCode, *, login: str = "dave") -> None:
    """The user on another device: open the verification URL, confirm, log in, consent."""
    assert code.verification_uri_complete is not None
    url, method, form = code.verification_uri_complete, "GET", None
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        for _ in range(20):
            response = await browser.request(method, url, data=form)
            method, form = "GET", None
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                continue
            page = response.text
            action = _FORM_ACTION.search(page)
            if action is None or "Sign-in Success" in page:
                assert "Success" in page, page[:500]
                return
            method, url = "POST", urljoin(url, html.unescape(action.group(1)))
            if 'name="prompt" value="login"' in page:
                form = {"prompt": "login", "login": login, "password": "any"}
            elif 'name="prompt" value="consent"' in page:
                form = {"prompt": "consent"}
            else:  # the device code confirmation: its hidden fields, then "confirm"
                form = {k: html.unescape(v) for k, v in _HIDDEN.findall(page)}
                form["confirm"] = "yes"
    raise AssertionError("the device authorization did not finish")


async def test_device_authorization_grant() -> None:
    # oidc-provider gives no `interval`: the client polls every 5 s (RFC 8628's default)
    async with open_oidc_provider() as provider, open_auth_sdk_server(provider.url) as server:
        codes: list[trio_mcp.auth.DeviceCode] = []
        log = TokenEndpointLog()

        async def show(code: trio_mcp.auth.DeviceCode) -> None:
            codes.append(code)
            await complete_device_code(code)

        auth = trio_mcp.OAuth(
            device=trio_mcp.auth.DeviceFlow(show), http_client=log.client, dpop=False
        )
        async with log.client:
            with trio.fail_after(60):
                async with trio_mcp.open_mcp_session(
                    trio_mcp.StreamableHTTPParameters(server.url, auth=auth)
                ) as session:
                    who = _tool_json(await session.call_tool("whoami", {}))
        assert who["sub"] == "dave"
        assert len(codes) == 1 and codes[0].user_code
        assert log.grants()[-1] == "urn:ietf:params:oauth:grant-type:device_code"
        (device_request,) = log.posted_to("/device/auth")
        assert device_request["resource"] == [server.url]

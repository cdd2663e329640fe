"""check_url, the URL-mode elicitation handler, -32042 and notifications/elicitation/complete."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.urls import URLCheck, URLPolicy, check_url

from .rawpeer import connect

BLOCKED = [
    ("http://example.com/", "scheme 'http'"),
    ("javascript:alert(1)", "scheme 'javascript'"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("https://user:pw@example.com/", "user name or password"),
    ("https://127.0.0.1/", "loopback"),
    ("https://0x7f.1/", "loopback address 127.0.0.1"),
    ("https://2130706433/", "loopback address 127.0.0.1"),
    ("https://017700000001/", "loopback address 127.0.0.1"),
    ("https://[::1]/", "loopback"),
    ("https://[::ffff:127.0.0.1]/", "loopback address 127.0.0.1"),
    ("https://[::ffff:10.1.2.3]/", "private address 10.1.2.3"),
    ("https://10.0.0.1/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://169.254.169.254/latest/meta-data", "link-local"),
    ("https://[fe80::1]/", "link-local"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://[::]/", "unspecified"),
    ("https://localhost:8443/", "localhost"),
    ("https://app.localhost/", "localhost"),
    ("https://a.b.c.d.e.f.example.com/", "6 subdomain levels"),
    ("ht tp://nope", "not a valid URL"),
    ("https://", "not a valid URL"),
    ("https://example.com/" + "a" * 3000, "longer than 2048"),
]


@pytest.mark.parametrize(("url", "reason"), BLOCKED)
def test_blocked(url: str, reason: str) -> None:
    check = check_url(url)
    assert not check.ok
    assert check.error is not None and reason in check.error
    with pytest.raises(trio_mcp.urls.UnsafeURLError) as info:
        check.raise_for_error()
    assert info.value.check is check


def test_passes_with_normalized_url_and_display_domain() -> None:
    check = check_url("HTTPS://Example.COM:443/a/../b?q=1#x")
    assert check.ok and check.raise_for_error() is check
    assert check.normalized == "https://example.com/b?q=1#x"
    assert check.display_domain == "example.com"
    assert check.warnings == ()
    assert check_url("https://8.8.8.8/").ok


def test_idn_display_and_homograph_warnings() -> None:
    plain = check_url("https://münchen.de/")
    assert plain.ok and plain.display_domain == "münchen.de" and plain.warnings == ()
    assert plain.normalized == "https://xn--mnchen-3ya.de/"
    mixed = check_url("https://\u0430pple.com/")  # Cyrillic a + Latin pple
    assert mixed.ok and mixed.display_domain == "xn--pple-43d.com"  # punycode shown
    assert "mixes scripts" in mixed.warnings[0]
    whole = check_url("https://xn--80ak6aa92e.com/")  # all-Cyrillic "apple"
    assert whole.display_domain == "xn--80ak6aa92e.com"
    assert "looks like Latin" in whole.warnings[0]


def test_policy_options() -> None:
    assert check_url("http://example.com/", URLPolicy(allow_http=True)).ok
    assert not check_url("ftp://example.com/", URLPolicy(allow_http=True)).ok
    assert check_url("https://127.0.0.1:8080/", URLPolicy(allow_private=True)).ok
    assert check_url("https://u@example.com/", URLPolicy(allow_credentials=True)).ok
    assert not check_url("https://example.com/abc", URLPolicy(max_length=10)).ok
    assert not check_url("https://a.example.com/", URLPolicy(max_subdomain_depth=0)).ok
    allow = URLPolicy(allow_domains=["example.com", "münchen.de"])
    assert check_url("https://login.example.com/", allow).ok
    assert check_url("https://münchen.de/", allow).ok
    assert "allow list" in (check_url("https://evil-example.com/", allow).error or "")
    deny = URLPolicy(deny_domains=["evil.com"])
    assert "deny list" in (check_url("https://www.evil.com/", deny).error or "")
    assert check_url("https://notevil.com/", deny).ok
    with pytest.raises(ValueError, match="max_length"):
        URLPolicy(max_length=0)
    with pytest.raises(TypeError):
        URLPolicy(allow_domains="example.com")
    with pytest.raises(TypeError):
        check_url(b"https://example.com")  # type: ignore[arg-type]


def url_request(url: str, request_id: int = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0", "id": request_id, "method": "elicitation/create",
        "params": {"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e1"},
    }  # fmt: skip


async def answer_to(peer: Any, request_id: int) -> dict[str, Any]:
    while True:
        for message in peer.received:
            if message.get("id") == request_id and "method" not in message:
                return message
        await peer.got_message.wait()


async def test_url_handler_consent_and_blocking() -> None:
    seen: list[URLCheck] = []

    async def consent(params: Any, check: URLCheck, ctx: Any) -> bool:
        seen.append(check)
        return True

    handler = trio_mcp.urls.url_elicitation_handler(consent)
    options = {"elicitation": handler, "elicitation_modes": ("form", "url")}
    async with connect(options=options) as (session, peer):
        caps = peer.sent("initialize")[0]["params"]["capabilities"]
        assert caps["elicitation"] == {"form": {}, "url": {}}
        await peer.send(url_request("https://example.com/login", 7))
        assert (await answer_to(peer, 7))["result"] == {"action": "accept"}
        assert [c.normalized for c in seen] == ["https://example.com/login"]
        await peer.send(url_request("https://169.254.169.254/", 8))
        assert (await answer_to(peer, 8))["result"] == {"action": "decline"}
        assert len(seen) == 1  # the unsafe URL never reached the consent callback
        form = {"jsonrpc": "2.0", "id": 9, "method": "elicitation/create",
                "params": {"mode": "form", "message": "x", "requestedSchema": {
                    "type": "object", "properties": {}}}}  # fmt: skip
        await peer.send(form)
        assert (await answer_to(peer, 9))["result"] == {"action": "decline"}


async def test_url_handler_consent_to_unsafe_and_verdicts() -> None:
    verdicts = iter(["cancel", False])

    async def consent(params: Any, check: URLCheck, ctx: Any) -> Any:
        assert not check.ok
        return next(verdicts)

    handler = trio_mcp.urls.url_elicitation_handler(consent, consent_to_unsafe=True)
    options = {"elicitation": handler, "elicitation_modes": ("url",)}
    async with connect(options=options) as (session, peer):
        await peer.send(url_request("http://10.0.0.1/", 1))
        assert (await answer_to(peer, 1))["result"] == {"action": "cancel"}
        await peer.send(url_request("http://10.0.0.1/", 2))
        assert (await answer_to(peer, 2))["result"] == {"action": "decline"}


async def test_url_mode_not_declared_by_default() -> None:
    async def consent(params: Any, check: URLCheck, ctx: Any) -> bool:
        raise AssertionError("never called")

    options = {"elicitation": trio_mcp.urls.url_elicitation_handler(consent)}
    async with connect(options=options) as (session, peer):
        caps = peer.sent("initialize")[0]["params"]["capabilities"]
        assert caps["elicitation"] == {"form": {}}
        await peer.send(url_request("https://example.com/", 3))
        assert (await answer_to(peer, 3))["error"]["code"] == -32602


async def test_url_elicitation_required_then_complete(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls = 0

    async def tools_call(peer: Any, message: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            await peer.error(message["id"], -32042, "needs auth", {"elicitations": [
                {"mode": "url", "elicitationId": "abc", "url": "https://example.com/auth",
                 "message": "Authorize"}, {"mode": "form"}]})  # fmt: skip
            from .rawpeer import no_answer

            no_answer()
        return {"content": [{"type": "text", "text": "ok"}]}

    async with connect(tools__call=tools_call) as (session, peer):
        with pytest.raises(trio_mcp.URLElicitationRequiredError) as info:
            await session.call_tool("x")
        assert info.value.code == -32042
        [needed] = info.value.elicitations
        assert needed.elicitation_id == "abc" and needed.url == "https://example.com/auth"
        with pytest.raises(trio.TooSlowError):
            await session.wait_elicitation_complete("abc", timeout=5)
        assert trio.current_time() == 5

        async def complete_later() -> None:
            await trio.sleep(3)
            await peer.send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                             "params": {"elicitationId": "abc"}})  # fmt: skip

        async with trio.open_nursery() as nursery:
            nursery.start_soon(complete_later)
            await session.wait_elicitation_complete("abc")
        assert trio.current_time() == 8
        await session.wait_elicitation_complete("abc")  # remembered: returns at once
        assert (await session.call_tool("x")).text == "ok"

"""The OAuth device authorization grant (RFC 8628), for machines without a browser.

The client asks the authorization server's ``device_authorization_endpoint`` for a device
code and a short ``user_code``, shows the user where to enter it (on a phone, another
computer), and polls the token endpoint until the user has approved, honouring
``interval`` and ``slow_down`` (RFC 8628 §3.5). Every wait is a `trio.sleep()`, so the
caller's cancel scope bounds it and ``MockClock`` drives it; the code's ``expires_in``
bounds it too ([`DeviceCodeExpiredError`][trio_mcp.auth.DeviceCodeExpiredError]).
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec
import trio

from .._exceptions import (
    AuthDiscoveryError,
    AuthorizationDeniedError,
    ClientRegistrationError,
    DeviceCodeExpiredError,
    TokenRequestError,
)
from .._jsonrpc import UNDECODABLE
from .._terminal import for_terminal
from . import _grants
from ._browser import LoopbackBrowser, UserAgent, check_browser_url
from ._metadata import AuthorizationServerMetadata, Discovery

if TYPE_CHECKING:
    from ._flows import Flow
    from ._tokens import Token

__all__ = ["DeviceCode", "DeviceFlow"]

logger = logging.getLogger("trio_mcp.auth")

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
_SLOW_DOWN_STEP = 5.0  # RFC 8628 §3.5: "increased by 5 seconds for this and all subsequent"
_DEFAULT_INTERVAL = 5.0  # RFC 8628 §3.2


@dataclass(frozen=True)
class DeviceCode:
    """What the user needs to approve a device authorization (RFC 8628 §3.2).

    Attributes:
        user_code: The short code the user types at ``verification_uri``.
        verification_uri: Where the user goes (on any device).
        verification_uri_complete: The same with the code filled in (fit for a QR code),
            when the server offers one.
        expires_in: Seconds until the code expires.
        interval: The polling interval the server asked for, in seconds.
    """

    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float


def print_device_code(code: DeviceCode) -> None:
    """The default ``show``: tell the user on stderr where to go and what to type.

    Only an ``http(s)`` verification URI is shown as a place to visit, and everything the
    server sent goes through [`for_terminal()`][trio_mcp.for_terminal] first.

    Raises:
        AuthDiscoveryError: The verification URI is not an ``http(s)`` URL.
    """
    check_browser_url(code.verification_uri, "the device flow's verification_uri")
    uri = for_terminal(code.verification_uri, newlines=False)
    user_code = for_terminal(code.user_code, newlines=False)
    lines = [f"To authorize, visit {uri} and enter the code {user_code}"]
    complete = code.verification_uri_complete
    if complete:
        try:
            check_browser_url(complete, "the device flow's verification_uri_complete")
        except AuthDiscoveryError as exc:
            logger.warning("not showing verification_uri_complete: %s", exc)
        else:
            lines.append(f"(or open {for_terminal(complete, newlines=False)})")
    lines.append(f"The code expires in {int(code.expires_in)} seconds.")
    # The authorization server wrote every part: shown, never acted on by the terminal.
    print(for_terminal("\n".join(lines)), file=sys.stderr, flush=True)


class DeviceFlow:
    """Opt in to the device authorization grant: ``OAuth(device=DeviceFlow(...))``.

    Used instead of the browser when the authorization server advertises a
    ``device_authorization_endpoint`` and either ``prefer`` is true, or there is no
    browser: ``OAuth(interactive=False)`` (headless: the device flow is then the only way
    a user may authorize) or a [`LoopbackBrowser`][trio_mcp.auth.LoopbackBrowser] with
    ``open_browser=False``. Otherwise the authorization code flow runs as usual.

    Args:
        show: Called once per flow with the [`DeviceCode`][trio_mcp.auth.DeviceCode] to show the
            user (a plain or async function; default: print it to stderr). It should return at once:
            the polling starts when it returns.
        prefer: Use the device flow whenever the server offers it, even where a browser
            could be opened.
    """

    def __init__(
        self,
        show: Callable[[DeviceCode], Awaitable[None] | None] | None = None,
        *,
        prefer: bool = True,
    ) -> None:
        self.show: Callable[[DeviceCode], Awaitable[None] | None] = (
            show if show is not None else print_device_code
        )
        self.prefer: bool = prefer


def should_use(
    device: DeviceFlow | None,
    metadata: AuthorizationServerMetadata,
    *,
    interactive: bool,
    user_agent: UserAgent,
) -> bool:
    """Whether the next user authorization at this server is a device flow.

    Args:
        device: The provider's ``device=`` (``None``: never).
        metadata: The authorization server's metadata (it must offer the endpoint).
        interactive: The provider's ``interactive=`` (headless: no browser).
        user_agent: The provider's browser step (one that opens no browser prefers this).
    """
    if device is None or metadata.device_authorization_endpoint is None:
        return False
    if device.prefer or not interactive:
        return True
    return isinstance(user_agent, LoopbackBrowser) and not user_agent.open_browser


class _DeviceAuthorization(msgspec.Struct, kw_only=True):
    device_code: str
    user_code: str
    verification_uri: str | None = None
    verification_url: str | None = None  # the name some servers (Google) used in drafts
    verification_uri_complete: str | None = None
    expires_in: float
    interval: float | None = None

    def __repr__(self) -> str:  # the device code is a credential until it expires
        return f"_DeviceAuthorization(device_code='***', user_code={self.user_code!r})"


_decoder = msgspec.json.Decoder(_DeviceAuthorization)


async def authorize(flow: Flow, device: DeviceFlow) -> Token:
    """Run the device flow and keep the token (`should_use()` chose it)."""
    context, scope = flow.context, flow.scope
    endpoint = context.metadata.device_authorization_endpoint
    if endpoint is None:  # (should_use checked it: no assert on a path the peer decides)
        raise AuthDiscoveryError(
            f"authorization server {context.issuer} has no device_authorization_endpoint"
        )
    client = await flow.identity(None, register=True, grant_types=[DEVICE_CODE, "refresh_token"])
    if client is None:  # (with register=True the identity returns one or raises)
        raise ClientRegistrationError(
            f"no client identity for authorization server {context.issuer}"
        )
    form = {"resource": context.resource}  # authenticate() adds client_id or Basic
    if scope:
        form["scope"] = scope
    code = await _request_code(flow, client, endpoint, form)
    shown = DeviceCode(
        user_code=code.user_code,
        verification_uri=code.verification_uri or code.verification_url or "",
        verification_uri_complete=code.verification_uri_complete,
        expires_in=code.expires_in,
        interval=code.interval if code.interval is not None else _DEFAULT_INTERVAL,
    )
    result = device.show(shown)
    if inspect.isawaitable(result):
        await result
    deadline = trio.current_time() + shown.expires_in
    interval = max(shown.interval, 0.0)
    poll = {
        "grant_type": DEVICE_CODE,
        "device_code": code.device_code,
        "resource": context.resource,
    }
    response: _grants.TokenResponse | None = None
    while response is None:
        if trio.current_time() + interval >= deadline:
            await trio.sleep_until(deadline)  # no poll fits before the code expires
            raise _expired(context, shown)
        await trio.sleep(interval)
        with trio.move_on_at(deadline):
            try:
                response = await flow.token_request(client, dict(poll))
            except TokenRequestError as exc:
                interval = _next_interval(exc, interval, context, shown)
                continue
        if response is None:  # the deadline passed during the request
            raise _expired(context, shown)
    return await flow.keep(client, response)


def _next_interval(
    exc: TokenRequestError, interval: float, context: Discovery, code: DeviceCode
) -> float:
    """The interval after a polling error (RFC 8628 §3.5), or raise the error to the caller."""
    if exc.error == "authorization_pending":
        return interval
    if exc.error == "slow_down":
        logger.debug("device flow: slow_down, polling every %ss", interval + _SLOW_DOWN_STEP)
        return interval + _SLOW_DOWN_STEP
    if exc.error == "access_denied":
        raise AuthorizationDeniedError(
            f"the user denied the device authorization at {code.verification_uri} "
            f"(authorization server {context.issuer})",
            error="access_denied",
        ) from exc
    if exc.error == "expired_token":
        raise _expired(context, code) from exc
    raise exc


def _expired(context: Discovery, code: DeviceCode) -> DeviceCodeExpiredError:
    return DeviceCodeExpiredError(
        f"the device code {code.user_code} expired before the user approved it at "
        f"{code.verification_uri} (authorization server {context.issuer}, "
        f"{int(code.expires_in)} s); start the authorization again"
    )


async def _request_code(
    flow: Flow, client: _grants.ClientInfo, endpoint: str, form: dict[str, str]
) -> _DeviceAuthorization:
    headers: dict[str, str] = {}
    _grants.authenticate(
        form,
        headers,
        client,
        audience=flow.context.metadata.issuer,
        private_key=flow.private_key,
        signing_algorithm=flow.signing_algorithm,
    )
    response = await _grants.post_form(
        flow.http, endpoint, form, headers, f"the device authorization request to {endpoint}"
    )
    if response.status_code != 200:
        raise _grants.oauth_error(
            response, response.content, f"the device authorization request to {endpoint}"
        )
    try:
        code = _decoder.decode(response.content)
    except UNDECODABLE as exc:
        raise AuthDiscoveryError(
            f"{endpoint} answered the device authorization request with a malformed "
            f"document ({exc})"
        ) from exc
    if not (code.verification_uri or code.verification_url):
        raise AuthDiscoveryError(f"{endpoint} answered with no verification_uri")
    return code

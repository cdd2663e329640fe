"""One request's answers to its server's challenges: ``401``, ``403`` and DPoP nonces.

The provider's ``httpx`` auth flow sends a request with its server's token
(`apply()`: ``Authorization: Bearer``, or ``DPoP`` with a fresh proof for a bound
token), then hands each response to `Challenges.retry()`, which says with which token
to send the request once more, or that the response is the answer:

* ``401`` with ``error="use_dpop_nonce"`` (a DPoP-bound token): once more with the
  server's nonce; a second demand right after is a nonce loop
  ([`DPoPNonceError`][trio_mcp.auth.DPoPNonceError]).
* ``401``: recover once (the provider refreshes, finds a stored token or authorizes);
  a ``401`` to the token just obtained is an [`AuthError`][trio_mcp.auth.AuthError].
* ``403`` with ``error="insufficient_scope"``: step up (the provider authorizes for the
  union of the scopes), at most ``max_step_up`` times; then
  [`InsufficientScopeError`][trio_mcp.auth.InsufficientScopeError].
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import httpx

from .._exceptions import AuthError, DPoPNonceError, InsufficientScopeError
from . import _dpop, _metadata
from ._tokens import Token

__all__ = ["Challenges", "Recovery", "apply", "canonical", "scope_union"]

Recovery = Callable[[str, _metadata.Challenge, Token | None], Awaitable[Token]]
"""``await recover(server_url, challenge, failed_token)``: the token to retry with."""


def canonical(url: str) -> str:
    """The server URL tokens are kept for: scheme and host lowercased, no query or fragment,
    no userinfo (a password in the URL never reaches a token key, a resource indicator or
    a message)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme.lower(), host.lower(), parts.path, "", ""))


def scope_union(*scopes: str | None) -> str | None:
    """The space-separated union of ``scopes`` in first-seen order (``None``: empty)."""
    seen: dict[str, None] = {}
    for scope in scopes:
        for item in (scope or "").split():
            seen[item] = None
    return " ".join(seen) or None


def apply(request: httpx.Request, token: Token | None, nonces: _dpop.NonceCache) -> None:
    """Set ``request``'s ``Authorization`` (and ``DPoP`` proof) for ``token``."""
    request.headers.pop("DPoP", None)
    if token is None:
        request.headers.pop("Authorization", None)
    elif token.dpop is not None:  # bound: never sent as Bearer, a fresh proof each time
        url = str(request.url)
        request.headers["Authorization"] = f"DPoP {token.access_token}"
        request.headers["DPoP"] = token.dpop.proof(
            request.method,
            url,
            access_token=token.access_token,
            nonce=nonces.get(url),
        )
    else:
        request.headers["Authorization"] = f"Bearer {token.access_token}"


class Challenges:
    """The answers of one request to its server's challenges (a new one per request).

    Args:
        server_url: The canonical URL of the MCP server.
        nonces: The provider's DPoP nonces (updated from every response).
        max_step_up: How many ``403 insufficient_scope`` step-ups this request may make.
        recover: After a ``401``: the token to retry with.
        step_up: After a ``403 insufficient_scope``: the token to retry with.
    """

    def __init__(
        self,
        server_url: str,
        nonces: _dpop.NonceCache,
        *,
        max_step_up: int,
        recover: Recovery,
        step_up: Recovery,
    ) -> None:
        self._server_url = server_url
        self._nonces = nonces
        self._max_step_up = max_step_up
        self._recover = recover
        self._step_up = step_up
        self._retried_401 = False
        self._nonce_retried = False
        self._step_ups = 0

    async def retry(
        self, request: httpx.Request, response: httpx.Response, token: Token | None
    ) -> tuple[bool, Token | None]:
        """Whether to send ``request`` once more after ``response``, and with which token.

        Args:
            request: The request as sent.
            response: Its server's answer.
            token: The token it carried.

        Returns:
            ``(False, token)`` when ``response`` is the answer; ``(True, token)`` to send
            the request again with ``token`` (`apply()` it first).

        Raises:
            DPoPNonceError: A nonce loop.
            AuthError: A ``401`` to the token just obtained.
            InsufficientScopeError: Still ``403 insufficient_scope`` after the step-ups.
        """
        server_url = self._server_url
        self._nonces.update(str(request.url), response.headers.get("dpop-nonce"))
        challenge = _metadata.parse_challenge(response.headers.get("www-authenticate"))
        if (
            response.status_code == 401
            and challenge.error == "use_dpop_nonce"
            and token is not None
            and token.dpop is not None
        ):
            if self._nonce_retried:
                raise DPoPNonceError(
                    f"{server_url} demanded a new DPoP nonce again after the retry that "
                    "carried its nonce (a nonce loop); giving up"
                )
            self._nonce_retried = True
            nonce = _dpop.parse_nonce(response.headers.get("dpop-nonce"), server_url)
            self._nonces.set(str(request.url), nonce)
            return True, token
        self._nonce_retried = False
        if response.status_code == 401:
            if self._retried_401:
                raise AuthError(
                    f"{server_url} refused the token it was just issued (HTTP 401, "
                    f"{challenge.error or 'no error code'}); the server and its "
                    "authorization server disagree, nothing more to try"
                )
            self._retried_401 = True
            return True, await self._recover(server_url, challenge, token)
        if response.status_code == 403 and challenge.error == "insufficient_scope":
            if self._step_ups >= self._max_step_up:
                raise InsufficientScopeError(
                    f"{server_url} still answers 403 insufficient_scope (asking for "
                    f"{challenge.scope!r}) after {self._step_ups} step-up authorizations; "
                    "the user cannot be granted that scope",
                    scope=challenge.scope,
                )
            self._step_ups += 1
            return True, await self._step_up(server_url, challenge, token)
        return False, token

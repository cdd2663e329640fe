"""The token endpoint: every token request of a provider, with its DPoP proof and nonce.

`TokenEndpoint.request()` POSTs a grant's form to the authorization server's token
endpoint with the client's authentication (``_grants``) and, when DPoP is in use, a fresh
proof (``_dpop``): with the key of the token being refreshed, or a new key for a new token
(`TokenEndpoint.new_key()`: the user's, a new pair, or none). A ``use_dpop_nonce``
answer is retried once with the server's nonce; another one is a nonce loop
([`DPoPNonceError`][trio_mcp.auth.DPoPNonceError]). The key of a successful answer waits until the
provider keeps the token (`TokenEndpoint.issued_key()`), so every grant that goes
through here gets DPoP.
"""

from __future__ import annotations

import logging

import httpx
import trio

from .._exceptions import DPoPError, DPoPNonceError
from . import _dpop, _grants
from ._metadata import Discovery
from ._settings import Settings

__all__ = ["TokenEndpoint", "resource_accepts_dpop"]

logger = logging.getLogger("trio_mcp.auth")

_MAX_UNCLAIMED = 16  # keys of answers nobody kept (a failed keep): the oldest is dropped


def resource_accepts_dpop(context: Discovery) -> bool:
    """Whether the MCP server said it takes DPoP tokens (its challenge or its metadata)."""
    prm = context.prm
    return context.rs_offers_dpop or (
        prm is not None and bool(prm.dpop_signing_alg_values_supported)
    )


class TokenEndpoint:
    """The token requests of one provider.

    Args:
        settings: The provider (its ``private_key``, ``signing_algorithm`` and ``dpop``,
            read at each request).
        nonces: The provider's DPoP nonces, per server (shared with the requests to the
            MCP servers).
    """

    def __init__(self, settings: Settings, nonces: _dpop.NonceCache) -> None:
        self._settings = settings
        self._nonces = nonces
        # the key each token response was requested with, until issued_key() claims it
        self._issued: dict[str, _dpop.DPoPKey] = {}

    def issued_key(self, access_token: str) -> _dpop.DPoPKey | None:
        """The DPoP key ``access_token`` was requested with (once), or ``None``."""
        return self._issued.pop(access_token, None)

    async def request(
        self,
        http: httpx.AsyncClient,
        context: Discovery,
        client: _grants.ClientInfo,
        form: dict[str, str],
        *,
        dpop: _dpop.DPoPKey | None = None,
    ) -> _grants.TokenResponse:
        """POST ``form`` to the token endpoint, with a DPoP proof when DPoP is in use.

        Args:
            http: The client for the authorization server.
            context: What discovery found.
            client: The client identity (its authentication is added to the request).
            form: The grant's parameters.
            dpop: The key of the token being refreshed (``None``: `new_key()`).

        Raises:
            TokenRequestError: The endpoint answered an OAuth error.
            DPoPNonceError: A nonce loop.
            DPoPError: The server demands DPoP and offers no algorithm we support.
        """
        settings = self._settings
        url = context.metadata.token_endpoint or ""
        key = dpop if dpop is not None else await self.new_key(context)
        doing = f"the {form['grant_type']} token request to {url}"
        for attempt in (1, 2):
            attempt_form = dict(form)  # a fresh client assertion (jti) for the retry too
            headers: dict[str, str] = {}
            _grants.authenticate(
                attempt_form,
                headers,
                client,
                audience=context.metadata.issuer,
                private_key=settings.private_key,
                signing_algorithm=settings.signing_algorithm,
            )
            if key is not None:
                headers["DPoP"] = key.proof("POST", url, nonce=self._nonces.get(url))
            response = await _grants.post_form(
                http, url, attempt_form, headers, f"the token request to {url}"
            )
            self._nonces.update(url, response.headers.get("dpop-nonce"))
            if response.status_code == 200:
                token = _grants.decode_token_response(response.content, url)
                if key is not None:
                    if len(self._issued) >= _MAX_UNCLAIMED:
                        self._issued.pop(next(iter(self._issued)))
                    self._issued[token.access_token] = key
                return token
            error = _grants.oauth_error(response, response.content, doing)
            if error.error == "use_dpop_nonce" and key is not None:
                if attempt == 2:
                    raise DPoPNonceError(
                        f"authorization server {context.issuer} demanded a new DPoP nonce "
                        "again after the retry that carried its nonce (a nonce loop); giving up"
                    ) from error
                nonce = _dpop.parse_nonce(response.headers.get("dpop-nonce"), url)
                self._nonces.set(url, nonce)
                continue
            if key is None and error.error in ("use_dpop_nonce", "invalid_dpop_proof"):
                advertised = context.metadata.dpop_signing_alg_values_supported
                raise DPoPError(
                    f"authorization server {context.issuer} demands DPoP proofs "
                    f"({error.error}) but advertises no signing algorithm trio_mcp supports "
                    f"(it lists {advertised!r}; supported: "
                    f"{', '.join(_dpop.SUPPORTED_ALGORITHMS)})"
                ) from error
            raise error
        raise AssertionError("unreachable")  # pragma: no cover

    async def new_key(self, context: Discovery) -> _dpop.DPoPKey | None:
        """The key for a new token: the user's, a new pair, or ``None`` (no DPoP).

        ``dpop="auto"`` binds only when the resource requires bound tokens, or when the
        authorization server advertises DPoP and the MCP server accepts it.

        Raises:
            DPoPError: DPoP is required and no algorithm both sides support exists.
        """
        await trio.lowlevel.checkpoint()
        dpop = self._settings.dpop
        if dpop is False:
            return None
        advertised = context.metadata.dpop_signing_alg_values_supported
        if dpop is not True and dpop != "auto":
            return _dpop.DPoPKey.from_user(dpop, advertised)
        required = dpop is True or (
            context.prm is not None and context.prm.dpop_bound_access_tokens_required
        )
        if advertised is None and not required:
            return None
        if dpop == "auto" and not required and not resource_accepts_dpop(context):
            # A DPoP-bound token is useless to a resource server that takes only Bearer
            # tokens (the common case): bind only when the resource says it accepts DPoP.
            return None
        algorithm = _dpop.choose_algorithm(advertised)
        resource_algs = context.prm.dpop_signing_alg_values_supported if context.prm else None
        if advertised is not None and resource_algs:
            both = [alg for alg in advertised if alg in resource_algs]
            algorithm = _dpop.choose_algorithm(both) or algorithm
        if algorithm is None:
            if required:
                raise DPoPError(
                    f"DPoP is required for {context.server_url} but authorization server "
                    f"{context.issuer} advertises no signing algorithm trio_mcp supports "
                    f"(dpop_signing_alg_values_supported: {advertised!r}; supported: "
                    f"{', '.join(_dpop.SUPPORTED_ALGORITHMS)})"
                )
            logger.info(
                "authorization server %s offers DPoP only with %r; using bearer tokens",
                context.issuer,
                advertised,
            )
            return None
        # RSA key generation takes 80-270 ms: never on the event loop
        logger.debug("generating a DPoP key (%s) in a worker thread", algorithm)
        return await trio.to_thread.run_sync(
            _dpop.DPoPKey.generate, algorithm, abandon_on_cancel=True
        )

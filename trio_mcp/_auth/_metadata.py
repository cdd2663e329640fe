"""Discovery: ``WWW-Authenticate`` challenges, protected-resource and authorization-server metadata.

The order of the well-known URLs is the MCP spec's (2025-11-25, "Authorization Server
Metadata Discovery"): protected-resource metadata from the challenge's ``resource_metadata``
first, then path-aware, then root; authorization-server metadata by RFC 8414 and OpenID
Connect Discovery, with path insertion (and OIDC path appending) for an issuer with a path.
An issuer is compared by exact string equality, never normalised (RFC 8414 §3.3, RFC 9207).
`discover()` runs that order for one MCP endpoint and returns a `Discovery`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import msgspec

from .._exceptions import AuthDiscoveryError
from .._jsonrpc import UNDECODABLE
from ._bodies import send
from ._policy import check_endpoint

logger = logging.getLogger("trio_mcp.auth")

__all__ = [
    "AuthorizationServerMetadata",
    "Challenge",
    "Discovery",
    "ProtectedResourceMetadata",
    "as_metadata_urls",
    "decode_as_metadata",
    "decode_prm",
    "discover",
    "fetch",
    "parse_challenge",
    "prm_urls",
    "resource_covers",
]


class ProtectedResourceMetadata(msgspec.Struct, kw_only=True):
    """RFC 9728 protected-resource metadata (the fields a client uses)."""

    resource: str
    authorization_servers: list[str] = []
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool = False


class AuthorizationServerMetadata(msgspec.Struct, kw_only=True):
    """RFC 8414 / OpenID Connect authorization-server metadata (the fields a client uses)."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    device_authorization_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    token_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    dpop_signing_alg_values_supported: list[str] | None = None


_prm_decoder = msgspec.json.Decoder(ProtectedResourceMetadata)
_as_decoder = msgspec.json.Decoder(AuthorizationServerMetadata)


@dataclass(frozen=True)
class Challenge:
    """A parsed ``WWW-Authenticate`` challenge (``Bearer`` or ``DPoP``)."""

    scheme: str = ""
    params: Mapping[str, str] | None = None

    def get(self, name: str) -> str | None:
        """One parameter of the challenge, or ``None``."""
        return (self.params or {}).get(name)

    @property
    def resource_metadata(self) -> str | None:
        """The ``resource_metadata`` URL (RFC 9728 §5.1)."""
        return self.get("resource_metadata")

    @property
    def scope(self) -> str | None:
        """The ``scope`` the server asks for."""
        return self.get("scope")

    @property
    def error(self) -> str | None:
        """The ``error`` code (``invalid_token``, ``insufficient_scope``, ...)."""
        return self.get("error")


_PARAM = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*,?')
_SCHEME = re.compile(r"\s*([A-Za-z0-9_.\-]+)(?=\s|$|,)")


def parse_challenge(header: str | None) -> Challenge:
    """Parse a ``WWW-Authenticate`` value; prefer a ``Bearer`` or ``DPoP`` challenge.

    Malformed parameters end the parse of that challenge; what was read is kept.

    Args:
        header: The header's value (``None``: no header).
    """
    if not header:
        return Challenge()
    challenges: list[Challenge] = []
    pos = 0
    while pos < len(header):
        scheme_match = _SCHEME.match(header, pos)
        if scheme_match is None:
            break
        scheme = scheme_match.group(1)
        pos = scheme_match.end()
        params: dict[str, str] = {}
        while pos < len(header):
            param = _PARAM.match(header, pos)
            if param is None:
                break
            value = param.group(2)
            value = re.sub(r"\\(.)", r"\1", value) if value is not None else param.group(3)
            params[param.group(1).lower()] = value
            pos = param.end()
        challenges.append(Challenge(scheme, params))
        if pos < len(header) and _SCHEME.match(header, pos) is None:
            break
    for wanted in ("dpop", "bearer"):
        for challenge in challenges:
            if challenge.scheme.lower() == wanted:
                return challenge
    return challenges[0] if challenges else Challenge()


def _origin_and_path(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AuthDiscoveryError(f"{url!r} is not an http(s) URL")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def prm_urls(server_url: str, from_header: str | None) -> list[str]:
    """Where to look for protected-resource metadata, in the spec's order.

    Args:
        server_url: The MCP endpoint.
        from_header: The challenge's ``resource_metadata``, if any.
    """
    origin, path = _origin_and_path(server_url)
    urls = [check_endpoint(from_header, "the resource_metadata URL")] if from_header else []
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an issuer's authorization-server metadata, in the spec's order.

    Args:
        issuer: The authorization server's issuer identifier.

    Raises:
        AuthDiscoveryError: The issuer fails the endpoint policy (`_policy`).
    """
    check_endpoint(issuer, "the authorization server (issuer)")
    origin, path = _origin_and_path(issuer)
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def decode_prm(body: bytes, url: str) -> ProtectedResourceMetadata:
    """Decode protected-resource metadata fetched from ``url``.

    Raises:
        AuthDiscoveryError: The document is not valid metadata.
    """
    try:
        metadata = _prm_decoder.decode(body)
    except UNDECODABLE as exc:
        raise AuthDiscoveryError(
            f"the protected-resource metadata at {url} is malformed ({exc}); the server's "
            "operator must fix it"
        ) from exc
    if not metadata.authorization_servers:
        raise AuthDiscoveryError(
            f"the protected-resource metadata at {url} names no authorization_servers"
        )
    return metadata


def decode_as_metadata(body: bytes, url: str, issuer: str) -> AuthorizationServerMetadata:
    """Decode authorization-server metadata fetched from ``url`` for ``issuer``.

    Raises:
        AuthDiscoveryError: The document is malformed, lacks an endpoint, or its ``issuer``
            is not exactly the issuer the URL was built from.
    """
    try:
        metadata = _as_decoder.decode(body)
    except UNDECODABLE as exc:
        raise AuthDiscoveryError(
            f"the authorization-server metadata at {url} is malformed ({exc})"
        ) from exc
    if metadata.issuer != issuer:
        raise AuthDiscoveryError(
            f"the authorization-server metadata at {url} says issuer {metadata.issuer!r}, "
            f"but it was looked up for issuer {issuer!r}; refusing to use it (RFC 8414 §3.3). "
            "The authorization server is misconfigured or impersonated."
        )
    if metadata.token_endpoint is None:
        raise AuthDiscoveryError(
            f"the authorization-server metadata at {url} has no token_endpoint"
        )
    return check_endpoints(metadata)


def check_endpoints(metadata: AuthorizationServerMetadata) -> AuthorizationServerMetadata:
    """Apply the endpoint policy (`_policy.check_endpoint()`) to every endpoint.

    Raises:
        AuthDiscoveryError: An endpoint is neither ``https`` nor ``http`` on loopback.
    """
    check_endpoint(metadata.issuer, "the authorization server's issuer")
    for name in (
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "device_authorization_endpoint",
        "revocation_endpoint",
    ):
        url: str | None = getattr(metadata, name)
        if url is not None:
            check_endpoint(url, f"the {name} of authorization server {metadata.issuer}")
    return metadata


async def fetch(http: httpx.AsyncClient, url: str) -> bytes | None:
    """GET a metadata document (at most 1 MiB); ``None`` when it is not there (not 200).

    Raises:
        AuthDiscoveryError: The request failed or the body is larger than 1 MiB.
    """
    answer = await send(
        http,
        "GET",
        url,
        error=AuthDiscoveryError,
        doing=f"fetching {url}",
        headers={"Accept": "application/json"},
    )
    if answer.status_code != 200:
        logger.debug("no metadata at %s (HTTP %d)", url, answer.status_code)
        return None
    return answer.content


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether a protected resource identifier covers the MCP endpoint ``server_url``.

    Same scheme and authority (case-insensitive), and the resource's path a prefix of the
    server's path on a segment boundary.
    """
    r, s = urlsplit(resource), urlsplit(server_url)
    if r.scheme.lower() != s.scheme.lower() or r.netloc.lower() != s.netloc.lower():
        return False
    if r.fragment:
        return False
    r_path = r.path.rstrip("/")
    s_path = s.path.rstrip("/")
    return s_path == r_path or s_path.startswith(r_path + "/")


def legacy_metadata(origin: str) -> AuthorizationServerMetadata:
    """The 2025-03-26 fallback endpoints of a server without any metadata."""
    return check_endpoints(
        AuthorizationServerMetadata(
            issuer=origin,
            authorization_endpoint=f"{origin}/authorize",
            token_endpoint=f"{origin}/token",
            registration_endpoint=f"{origin}/register",
            code_challenge_methods_supported=["S256"],
        )
    )


@dataclass
class Discovery:
    """What discovery found for one MCP endpoint."""

    server_url: str
    resource: str
    issuer: str
    metadata: AuthorizationServerMetadata
    prm: ProtectedResourceMetadata | None
    # the resource server challenged with the DPoP scheme (so it accepts DPoP tokens)
    rs_offers_dpop: bool = False


async def discover(http: httpx.AsyncClient, server_url: str, challenge: Challenge) -> Discovery:
    """Protected-resource metadata, then the authorization server's, for ``server_url``.

    Every URL found passes the endpoint policy (`_policy`); every document is read
    with the 1 MiB bound (`_bodies`). A server without protected-resource metadata
    (2025-03-26) has its origin as issuer, and the fallback endpoints when that publishes
    no metadata either.

    Raises:
        AuthDiscoveryError: The metadata names a resource that does not cover
            ``server_url``, an endpoint the policy refuses, or is missing or malformed.
    """
    prm: ProtectedResourceMetadata | None = None
    for url in prm_urls(server_url, challenge.resource_metadata):
        body = await fetch(http, url)
        if body is not None:
            prm = decode_prm(body, url)
            logger.debug("%s: protected-resource metadata at %s", server_url, url)
            break
    if prm is not None:
        if not resource_covers(prm.resource, server_url):
            raise AuthDiscoveryError(
                f"the protected-resource metadata of {server_url} is for resource "
                f"{prm.resource!r}, which does not cover this server; refusing to "
                "authorize (a token for it could be replayed elsewhere)"
            )
        resource = prm.resource
        issuer = check_endpoint(prm.authorization_servers[0], "the authorization server")
    else:
        # 2025-03-26: no protected-resource metadata; the server's origin is the issuer
        parts = urlsplit(server_url)
        issuer = f"{parts.scheme}://{parts.netloc}"
        resource = server_url
        logger.debug("%s: no protected-resource metadata; issuer %s", server_url, issuer)
    metadata: AuthorizationServerMetadata | None = None
    for url in as_metadata_urls(issuer):
        body = await fetch(http, url)
        if body is not None:
            metadata = decode_as_metadata(body, url, issuer)
            logger.debug("%s: authorization-server metadata at %s", server_url, url)
            break
    if metadata is None:
        if prm is not None:
            raise AuthDiscoveryError(
                f"authorization server {issuer} publishes no metadata at "
                f"{', '.join(as_metadata_urls(issuer))}"
            )
        metadata = legacy_metadata(issuer)
    return Discovery(
        server_url, resource, issuer, metadata, prm, challenge.scheme.lower() == "dpop"
    )

"""DPoP (RFC 9449): proof-of-possession keys, proofs and server nonces.

A DPoP key pair is made for each token (or given by the user as ``OAuth(dpop=key)``);
every token request and every request to the resource server carries a fresh proof, a
JWT signed by the private key with the public key in its header. A token the
authorization server issued as ``token_type: DPoP`` is bound to that key (``cnf.jkt``)
and only ever sent as ``Authorization: DPoP`` with a proof that also carries ``ath``,
the hash of the token.

Servers may demand a nonce (``use_dpop_nonce`` with a ``DPoP-Nonce`` header); the latest
nonce of each server (origin) is remembered and put in the next proof to it.

JWS signing and JWK conversion come from PyJWT and ``cryptography`` (the ``auth``
extra), imported on first use; `hashlib` makes the ``ath`` hash and the JWK
thumbprint (RFC 7638), `secrets` the ``jti``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._exceptions import AuthError, DPoPError, DPoPNonceError

__all__ = [
    "SUPPORTED_ALGORITHMS",
    "DPoPKey",
    "NonceCache",
    "choose_algorithm",
    "htu",
    "jwk_thumbprint",
    "origin",
    "parse_nonce",
]

SUPPORTED_ALGORITHMS: tuple[str, ...] = (
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "PS256",
    "RS256",
    "PS384",
    "RS384",
    "PS512",
    "RS512",
)
"""The JWS algorithms DPoP proofs can be signed with, in order of preference."""

_EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
_RSA_ALGORITHMS = ("PS256", "RS256", "PS384", "RS384", "PS512", "RS512")
# RFC 9449 §8.1: NQCHAR = %x21 / %x23-5B / %x5D-7E
_NONCE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_NONCE_LIMIT = 1024
# RFC 7638 §3.2: the required members of each key type, in lexicographic order
_THUMBPRINT_MEMBERS = {
    "EC": ("crv", "kty", "x", "y"),
    "RSA": ("e", "kty", "n"),
    "OKP": ("crv", "kty", "x"),
}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _import_jwt() -> Any:
    try:
        import jwt
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise AuthError("DPoP needs PyJWT and cryptography: pip install 'trio-mcp[auth]'") from exc
    return jwt


def choose_algorithm(advertised: Sequence[str] | None) -> str | None:
    """The algorithm to sign proofs with: ES256 if offered, else the first supported one.

    Args:
        advertised: The server's ``dpop_signing_alg_values_supported`` (``None``: it did not
            say, ES256 is tried).

    Returns:
        The algorithm, or ``None`` when the server offers none that trio_mcp can use.
    """
    if advertised is None:
        return "ES256"
    for algorithm in SUPPORTED_ALGORITHMS:
        if algorithm in advertised:
            return algorithm
    return None


def htu(url: str) -> str:
    """The ``htu`` claim for a request URL: no query, no fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", "", ""))


def origin(url: str) -> str:
    """The server a nonce belongs to: scheme, host and port of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def parse_nonce(value: str | None, server: str) -> str:
    """The nonce of a ``DPoP-Nonce`` header that answers a ``use_dpop_nonce`` challenge.

    Args:
        value: The header's value (``None``: absent).
        server: Who sent it, for the message.

    Raises:
        DPoPNonceError: The header is absent, empty, too long or not NQCHAR (RFC 9449 §8.1).
    """
    if value is None:
        raise DPoPNonceError(
            f"{server} answered use_dpop_nonce without a DPoP-Nonce header; the server is "
            "broken (RFC 9449 §8): there is no nonce to retry with"
        )
    nonce = value.strip()
    if len(nonce) > _NONCE_LIMIT or _NONCE.fullmatch(nonce) is None:
        shown = nonce[:40] + ("..." if len(nonce) > 40 else "")
        raise DPoPNonceError(
            f"{server} sent a malformed DPoP-Nonce header ({shown!r}): a nonce is 1 to "
            f"{_NONCE_LIMIT} printable characters without spaces, quotes or backslashes "
            "(RFC 9449 §8.1)"
        )
    return nonce


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (EC, RSA or OKP)."""
    members = {name: jwk[name] for name in _THUMBPRINT_MEMBERS[str(jwk["kty"])]}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return _b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


class NonceCache:
    """The latest DPoP nonce of each server (origin); at most ``limit`` servers."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        self._nonces: OrderedDict[str, str] = OrderedDict()

    def get(self, url: str) -> str | None:
        """The nonce to put in a proof for ``url``, if its server gave one."""
        return self._nonces.get(origin(url))

    def set(self, url: str, nonce: str) -> None:
        """Remember ``nonce`` as the latest of ``url``'s server."""
        key = origin(url)
        self._nonces[key] = nonce
        self._nonces.move_to_end(key)
        while len(self._nonces) > self._limit:
            self._nonces.popitem(last=False)

    def update(self, url: str, header: str | None) -> None:
        """Remember a well-formed ``DPoP-Nonce`` of any answer; a malformed one is ignored."""
        if header is None:
            return
        try:
            self.set(url, parse_nonce(header, url))
        except DPoPNonceError:
            pass  # only an answer that demands the nonce makes a bad header an error


def _algorithm_for(key: Any, advertised: Sequence[str] | None) -> str | None:
    """The algorithm ``key`` (a ``cryptography`` private key) signs with, if supported."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, ec.EllipticCurvePrivateKey):
        candidates = [alg for alg, curve in _EC_CURVES.items() if curve == key.curve.name]
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        candidates = ["EdDSA"]
    elif isinstance(key, rsa.RSAPrivateKey):
        candidates = list(_RSA_ALGORITHMS)
    else:
        candidates = []
    for algorithm in candidates:
        if advertised is None or algorithm in advertised:
            return algorithm
    return None


class DPoPKey:
    """A DPoP key pair and the algorithm its proofs are signed with.

    Args:
        private_key: A ``cryptography`` private key (EC P-256/384/521, Ed25519 or RSA).
        algorithm: The JWS algorithm (one of `SUPPORTED_ALGORITHMS`).
    """

    def __init__(self, private_key: Any, algorithm: str) -> None:
        jwt = _import_jwt()
        self.private_key: Any = private_key
        self.algorithm: str = algorithm
        algorithm_object = jwt.get_algorithm_by_name(algorithm)
        self.public_jwk: dict[str, Any] = dict(
            algorithm_object.to_jwk(private_key.public_key(), as_dict=True)
        )
        self._private_jwk: dict[str, Any] = dict(algorithm_object.to_jwk(private_key, as_dict=True))

    @classmethod
    def generate(cls, algorithm: str) -> DPoPKey:
        """A new key pair for ``algorithm`` (EC on its curve, Ed25519, or RSA 2048 bits)."""
        _import_jwt()
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        if algorithm in _EC_CURVES:
            curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
            return cls(ec.generate_private_key(curve[algorithm]), algorithm)
        if algorithm == "EdDSA":
            return cls(ed25519.Ed25519PrivateKey.generate(), algorithm)
        if algorithm in _RSA_ALGORITHMS:
            return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), algorithm)
        raise DPoPError(f"DPoP proofs cannot be signed with {algorithm!r}")

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> DPoPKey:
        """The key pair of a private JWK (as `private_jwk()` wrote it).

        Raises:
            DPoPError: The JWK is not a private key trio_mcp can sign DPoP proofs with.
        """
        jwt = _import_jwt()
        data = dict(jwk)
        algorithm = data.get("alg")
        if "d" not in data:
            raise DPoPError("a DPoP key JWK must be a private key (it has no 'd' member)")
        try:
            key = jwt.PyJWK.from_dict(data).key
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise DPoPError(f"the DPoP key JWK is malformed ({exc})") from exc
        chosen = algorithm if isinstance(algorithm, str) else _algorithm_for(key, None)
        if chosen is None or chosen not in SUPPORTED_ALGORITHMS:
            raise DPoPError(f"the DPoP key JWK has an unsupported algorithm {algorithm!r}")
        return cls(key, chosen)

    @classmethod
    def from_user(cls, key: Any, advertised: Sequence[str] | None) -> DPoPKey:
        """The user's ``OAuth(dpop=key)``: a ``cryptography`` private key or a private JWK.

        Args:
            key: The key.
            advertised: The server's ``dpop_signing_alg_values_supported``, if it said.

        Raises:
            DPoPError: The key is of no type, or for no algorithm, the server accepts.
        """
        if isinstance(key, DPoPKey):
            if advertised is None or key.algorithm in advertised:
                return key
            private_key: Any = key.private_key
        elif isinstance(key, Mapping):
            loaded = cls.from_jwk(key)  # pyright: ignore[reportUnknownArgumentType]
            if advertised is None or loaded.algorithm in advertised:
                return loaded
            private_key = loaded.private_key
        else:
            private_key = key
        _import_jwt()
        algorithm = _algorithm_for(private_key, advertised)
        if algorithm is None:
            raise DPoPError(
                f"the DPoP key given as OAuth(dpop=...) ({type(private_key).__name__}) signs "
                f"with none of the algorithms the server accepts ({', '.join(advertised or [])}); "
                "pass an EC P-256 key (ES256) or dpop=True for a generated one"
            )
        return cls(private_key, algorithm)

    def private_jwk(self) -> dict[str, Any]:
        """The private key as a JWK with its ``alg`` (to store it beside its token)."""
        return {**self._private_jwk, "alg": self.algorithm}

    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint of the public key (``cnf.jkt``, ``dpop_jkt``)."""
        return jwk_thumbprint(self.public_jwk)

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A fresh DPoP proof JWT (RFC 9449 §4.2) for one request.

        Args:
            method: The request's HTTP method (``htm``).
            url: The request's URL; ``htu`` is it without query and fragment.
            access_token: The DPoP-bound token the request presents (adds ``ath``).
            nonce: The server's latest nonce, if it gave one.
            now: The wall-clock time to stamp as ``iat`` (default: now).
        """
        jwt = _import_jwt()
        claims: dict[str, Any] = {
            "jti": _b64url(secrets.token_bytes(16)),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time() if now is None else now),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("utf-8")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        token: str = jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers=headers)
        return token

"""Protocol eras: which revisions trio_mcp speaks and how it tells a server's era.

The decision logic lives here, in one place, for every transport: the session sends a
modern request (``server/discover``) and :func:`classify_probe` turns the outcome into a
verdict following ``2026-07-28/basic/versioning.mdx`` and the transport binding pages:

* a ``DiscoverResult`` with a mutual modern version: modern;
* a recognized modern error (``-32022`` with a mutual modern version): retry at that version;
* an HTTP 400 whose body is a recognized modern JSON-RPC error: modern, handled like above;
* HTTP 401/403: not an era verdict, the error is raised;
* anything else (another JSON-RPC error, an HTTP 4xx, no answer within the probe
  timeout, a ``DiscoverResult`` without a mutual modern version, a result that is not a
  ``DiscoverResult`` at all): legacy, ``initialize``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import trio

from ._exceptions import ProtocolError, ServerError, UnsupportedProtocolVersionError

__all__ = [
    "LATEST_LEGACY_VERSION",
    "LEGACY_VERSIONS",
    "MODERN_ERROR_CODES",
    "MODERN_VERSIONS",
    "ProbeVerdict",
    "Verdict",
    "classify_probe",
    "era_cache",
]

#: Modern (stateless, per-request ``_meta``) revisions, newest first.
MODERN_VERSIONS: Final = ("2026-07-28",)
#: Legacy (``initialize`` handshake) revisions, newest first.
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION: Final = LEGACY_VERSIONS[0]
#: JSON-RPC error codes only a modern server sends.
MODERN_ERROR_CODES: Final = frozenset({-32020, -32021, -32022})

#: The era verdict per HTTP origin, kept for the life of the process (re-probed on failure).
era_cache: dict[str, str] = {}


class ProbeVerdict(enum.Enum):
    """What a ``server/discover`` probe tells."""

    MODERN = "modern"
    RETRY = "retry"
    LEGACY = "legacy"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A probe's verdict: the era, the version to use next, and why."""

    kind: ProbeVerdict
    version: str | None = None
    reason: str = ""


def _mutual(offered: Sequence[str], ours: Sequence[str]) -> str | None:
    for version in ours:
        if version in offered:
            return version
    return None


class _ErrorBody(msgspec.Struct):
    code: int
    data: Any = None


class _ErrorEnvelope(msgspec.Struct):
    error: _ErrorBody


_error_envelope_decoder: Final = msgspec.json.Decoder(_ErrorEnvelope)


def _modern_error_in_body(body: str) -> tuple[int, Any] | None:
    """Find a modern JSON-RPC error in an HTTP error body."""
    try:
        decoded = _error_envelope_decoder.decode(body.encode())
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeError):
        return None
    if decoded.error.code in MODERN_ERROR_CODES:
        return decoded.error.code, decoded.error.data
    return None


def classify_probe(
    discovered: Any,
    error: BaseException | None,
    modern: Sequence[str] = MODERN_VERSIONS,
    legacy: Sequence[str] = LEGACY_VERSIONS,
) -> Verdict:
    """Classify the outcome of a ``server/discover`` probe.

    Args:
        discovered: The decoded ``DiscoverResult`` (anything with ``supported_versions``),
            or None if the probe failed.
        error: The exception the probe raised, if any.
        modern: The modern versions this client speaks, preferred first.
        legacy: The legacy versions this client speaks, preferred first.
    """
    if discovered is not None:
        offered = list(getattr(discovered, "supported_versions", None) or [])
        version = _mutual(offered, modern)
        if version is not None:
            return Verdict(ProbeVerdict.MODERN, version, "server/discover succeeded")
        return Verdict(
            ProbeVerdict.LEGACY,
            None,
            f"server/discover listed no modern version we speak ({offered})",
        )
    if isinstance(error, UnsupportedProtocolVersionError):
        version = _mutual(error.supported, modern)
        if version is not None:
            return Verdict(ProbeVerdict.RETRY, version, "server asked for another modern version")
        if _mutual(error.supported, legacy) is not None:
            return Verdict(
                ProbeVerdict.LEGACY, None, "server supports only legacy versions we speak"
            )
        return Verdict(
            ProbeVerdict.FAIL,
            None,
            f"the server supports only {error.supported}, none of which trio_mcp speaks",
        )
    if isinstance(error, ServerError) and error.code in MODERN_ERROR_CODES:
        return Verdict(ProbeVerdict.FAIL, None, f"modern server rejected the probe: {error}")
    inner = getattr(error, "error", error)
    status = getattr(inner, "status_code", None)
    if status is not None:
        if status in (401, 403):
            return Verdict(ProbeVerdict.FAIL, None, f"HTTP {status}: authorization is required")
        found = _modern_error_in_body(str(getattr(inner, "body", "")))
        if found is not None:
            code, data = found
            if code == -32022:
                supported = UnsupportedProtocolVersionError(code, "", data).supported
                version = _mutual(supported, modern)
                if version is not None:
                    return Verdict(ProbeVerdict.RETRY, version, "server asked for another version")
            return Verdict(
                ProbeVerdict.FAIL, None, f"modern server rejected the probe (code {code})"
            )
        if 400 <= status < 500:
            return Verdict(ProbeVerdict.LEGACY, None, f"HTTP {status} without a modern error body")
        return Verdict(ProbeVerdict.FAIL, None, f"HTTP {status} from the server")
    if isinstance(error, trio.TooSlowError):
        return Verdict(ProbeVerdict.LEGACY, None, "no answer to server/discover in time")
    if isinstance(error, ServerError):
        return Verdict(ProbeVerdict.LEGACY, None, f"server/discover failed with {error.code}")
    if isinstance(error, ProtocolError):
        return Verdict(ProbeVerdict.LEGACY, None, f"the answer is not a DiscoverResult: {error}")
    return Verdict(ProbeVerdict.FAIL, None, f"server/discover failed: {error!r}")

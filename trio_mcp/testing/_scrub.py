"""Scrubbing secrets: the one rule for every string a cassette writes.

A name is secret when it looks like one ([`is_secret_name()`][trio_mcp.testing.is_secret_name]);
values under secret names, the userinfo of URLs, bearer credentials, ``name=value`` pairs with a
secret name and the literal secrets given (an environment's secret values, a parameters object's
``env=`` and ``headers=`` values, ``secrets=``) become ``"[REDACTED]"``. Pure functions, no I/O.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

__all__ = [
    "REDACTED",
    "describe",
    "dict_of",
    "env_secrets",
    "is_secret_name",
    "needles",
    "scrub",
    "scrub_with",
    "seq_of",
    "target_secrets",
]

REDACTED = "[REDACTED]"
"""What a scrubbed secret becomes; in a cassette it matches any value on replay."""

# A name is secret when (letters and digits only, lowercased) it ends with one of these,
# or contains one of the fragments anywhere.
_SECRET_SUFFIXES = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "sessionkey",
    "signingkey",
    "auth",
    "authorization",
    "cookie",
    "credential",
    "credentials",
)
_SECRET_FRAGMENTS = ("password", "passwd", "secret", "credential")
_NOT_SECRET = frozenset({"progresstoken", "nextcursor", "cursor", "maxtokens"})
# Values shorter than this are not scrubbed wherever they occur (they would mangle text).
_MIN_NEEDLE = 6
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
# scheme://userinfo@ : the userinfo (user, or user:password) is a credential
# (each pattern starts only where a run of its first characters starts: linear time)
_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)([^/?#\s@\[\]]+)@")
# name=value, name: value, "name": "value" (a value up to a space, quote, & ; or ,)
_PAIR = re.compile(r"""(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)"?[ \t]*[=:][ \t]*"?""")
_PAIR_VALUE = re.compile(r"""[^\s"'&;,]+""")


def seq_of(value: Any) -> list[Any]:
    """``value`` (a list or tuple the caller checked) as a list of unknown items."""
    items: list[Any] = list(value)
    return items


def dict_of(value: Any) -> dict[Any, Any]:
    """``value`` (a mapping the caller checked) as a dict of unknown items."""
    items: dict[Any, Any] = dict(value)
    return items


def is_secret_name(name: str) -> bool:
    """Whether a key, header, flag or environment variable named ``name`` holds a secret.

    The one rule the cassette uses for names, wherever it writes: ``token``,
    ``access_token``, ``apiKey``, ``X-Api-Key``, ``Authorization``, ``Cookie``,
    ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``, ``--client-secret`` are
    secret; ``progressToken``, ``maxTokens``, ``nextCursor``, ``tokenEndpoint`` are not.

    Args:
        name: The name (any case, ``_``/``-``/``.`` separators, leading dashes allowed).

    Returns:
        True if values under this name are scrubbed.
    """
    normal = "".join(ch for ch in name.lower() if ch.isalnum())
    if not normal or normal in _NOT_SECRET:
        return False
    return normal.endswith(_SECRET_SUFFIXES) or any(f in normal for f in _SECRET_FRAGMENTS)


def _secret_text(text: str, needles: list[str]) -> str:
    """``text`` with its secrets scrubbed: the one rule for every string a cassette writes."""
    for needle in needles:
        text = text.replace(needle, REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    for match in _PAIR.finditer(text):
        if match.start() < done or not is_secret_name(match.group(1)):
            continue
        value = _PAIR_VALUE.match(text, match.end())
        if value is not None:
            pieces += [text[done : match.end()], REDACTED]
            done = value.end()
    return "".join(pieces) + text[done:] if pieces else text


def needles(secrets: Iterable[str]) -> list[str]:
    """Literal secrets, longest first (so a secret containing another goes whole)."""
    return sorted({s for s in secrets if s}, key=len, reverse=True)


def _value_secrets(name: str, value: str) -> list[str]:
    """What of an environment variable's (or header's) value is secret, to scrub anywhere."""
    found = [value] if is_secret_name(name) and len(value) >= _MIN_NEEDLE else []
    for match in _USERINFO.finditer(value):
        userinfo = match.group(2)
        found += [userinfo, *(part for part in userinfo.split(":") if len(part) >= _MIN_NEEDLE)]
    return found


def env_secrets() -> list[str]:
    return [s for name, value in os.environ.items() for s in _value_secrets(name, value)]


def target_secrets(target: Any) -> list[str]:
    """The secret values of a parameters object's mappings (``env=``, ``headers=``)."""
    found: list[str] = []
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        for item in dataclasses.fields(target):
            value = getattr(target, item.name)
            if isinstance(value, Mapping):
                for key, entry in dict_of(value).items():
                    found += _value_secrets(str(key), str(entry))
    return found


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return ``value`` (decoded JSON) with its secrets replaced by ``"[REDACTED]"``.

    The same rule as the cassette's: values under secret names
    ([`is_secret_name()`][trio_mcp.testing.is_secret_name]), URL userinfo, bearer credentials,
    ``name=value`` pairs with a secret name, and the literal ``secrets``.

    Args:
        value: A decoded JSON value.
        secrets: Literal strings to remove wherever they occur.

    Returns:
        A scrubbed copy.
    """
    return scrub_with(value, needles(secrets))


def scrub_with(value: Any, needles: list[str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in cast(dict[str, Any], value).items():
            if is_secret_name(key) and isinstance(item, (str, int, float)) and item != "":
                out[key] = REDACTED
            else:
                out[key] = scrub_with(item, needles)
        return out
    if isinstance(value, list):
        return [scrub_with(item, needles) for item in seq_of(value)]
    if isinstance(value, str):
        return _secret_text(value, needles)
    return value


def _argv(parts: Iterable[Any], needles: list[str]) -> list[str]:
    """An argv, scrubbed: the value after a secret flag (``--token X``) goes too."""
    out: list[str] = []
    hide_next = False
    for part in parts:
        text = str(part)
        if hide_next:
            out.append(REDACTED)
        else:
            out.append(_secret_text(text, needles))
        hide_next = text.startswith("-") and "=" not in text and is_secret_name(text)
    return out


def describe(target: Any, needles: list[str]) -> Any:
    """A scrubbed JSON description of what was recorded (a parameters object's simple fields).

    Mappings (``env=``, ``headers=``) are written as their names only.
    """
    if isinstance(target, str):
        return _secret_text(target, needles)
    if isinstance(target, (list, tuple)):
        return _argv(seq_of(target), needles)
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        fields: dict[str, Any] = {"type": type(target).__name__}
        for item in dataclasses.fields(target):
            value = getattr(target, item.name)
            if isinstance(value, str):
                fields[item.name] = _secret_text(value, needles)
            elif isinstance(value, (int, float, bool)) or value is None:
                fields[item.name] = value
            elif isinstance(value, Mapping):
                fields[item.name] = sorted(str(k) for k in dict_of(value))
            elif isinstance(value, (list, tuple)):
                fields[item.name] = _argv(seq_of(value), needles)
            elif isinstance(value, os.PathLike):
                path = os.fspath(cast("os.PathLike[str]", value))
                fields[item.name] = _secret_text(path, needles)
        return fields
    return type(target).__name__

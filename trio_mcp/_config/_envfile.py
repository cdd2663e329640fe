"""Env files: read the ``KEY=value`` lines a config entry's ``envFile`` names.

One job: `read_env_file()` (blocking; the loader runs it in a worker thread). Blank
lines and ``#`` comments are skipped, an ``export`` prefix is allowed, and one pair of
matching quotes around a value is removed.
"""

from __future__ import annotations

from pathlib import Path

from .._exceptions import ConfigError

__all__ = ["read_env_file"]


def read_env_file(path: str, source: str, key_path: str) -> dict[str, str]:
    """The variables of the env file at ``path`` (errors name ``source`` and ``key_path``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(source, key_path, f"cannot read the envFile: {exc.strerror}") from None
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = value
    return values

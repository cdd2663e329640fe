"""The cassette file: its format, writing it, and loading it with every line checked.

A [`Recorder`][trio_mcp.testing.Recorder] (``_recorder``) records a real MCP session to a
cassette; a [`ReplayServer`][trio_mcp.testing.ReplayServer] (``_replay``) plays it back on trio's
(virtual) clock. A cassette is a JSON Lines file: a header line, then one line per message
with the time it was seen (seconds since the connection opened) and its direction:

```text
{"cassette": "trio_mcp", "version": 1, "target": {"command": ["python", "server.py"]}}
{"t": 0.000112, "from": "client", "message": {"jsonrpc": "2.0", "id": 1, ...}}
{"t": 0.041250, "from": "server", "message": {"jsonrpc": "2.0", "id": 1, ...}}
{"t": 0.052007, "from": "server", "end": true, "exit_code": 1, "stderr_tail": "..."}
```

Secrets are scrubbed when the cassette is written (``_scrub``), by one rule used for every line it
writes (header, messages, raw lines, stderr): a name is secret when it looks like one
([`is_secret_name()`][trio_mcp.testing.is_secret_name]: ``token``, ``apiKey``, ``Authorization``,
``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``...; not ``progressToken`` or ``maxTokens``); values under
secret names, the userinfo of URLs (``https://user:pass@host``), bearer credentials, ``name=value``
pairs with a secret name, the values of secret-named environment variables (this process's and the
``env=`` given to the recorded server) and any ``secrets=`` you name become
``"[REDACTED]"``. Of the recorded server's ``env=`` and ``headers=`` only the names are
written. Replay treats ``"[REDACTED]"`` as matching any value (in linear time).

A cassette that does not load (truncated, edited by hand) raises
[`CassetteError`][trio_mcp.testing.CassetteError] naming the file and line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from .._exceptions import CassetteError
from ._scrub import dict_of

__all__ = ["load", "load_cassette", "write"]

_decoder = msgspec.json.Decoder()


def write(path: Path, target: Any, events: Sequence[dict[str, Any]]) -> None:
    """Write a cassette: its header (describing ``target``, already scrubbed), then the events."""
    header = {"cassette": "trio_mcp", "version": 1, "target": target}
    lines = [json.dumps(header)] + [json.dumps(event) for event in events]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_cassette(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read a cassette file: its header and its events, every line checked.

    Args:
        path: The cassette (JSON Lines).

    Returns:
        The header dict and the list of event dicts.

    Raises:
        CassetteError: The file is not a trio_mcp cassette, or a line of it is malformed
            (not JSON, not an object, a missing or mistyped field); the error names the
            file and the line. It is also a `ValueError`.
        OSError: The file cannot be read.
    """
    header, events, _ = load(path)
    return header, events


def load(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[int]]:
    """The header, the events and each event's 1-based line in the file."""
    name = os.fspath(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = data[: exc.start].count(b"\n") + 1
        raise CassetteError(name, where, "not UTF-8 text") from exc
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value: Any = _decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise CassetteError(name, number, f"not a JSON line ({exc}); truncated?") from exc
        if not isinstance(value, dict):
            raise CassetteError(name, number, f"expected a JSON object, got {_kind(value)}")
        item = dict_of(value)
        if header is None:
            if item.get("cassette") != "trio_mcp":
                raise CassetteError(name, number, "not a trio_mcp cassette (no header line)")
            if item.get("version") != 1:
                raise CassetteError(
                    name, number, f"unsupported cassette version {item.get('version')!r}"
                )
            header = item
            continue
        problem = _event_problem(item)
        if problem is not None:
            raise CassetteError(name, number, problem)
        events.append(item)
        numbers.append(number)
    if header is None:
        raise CassetteError(name, None, "empty cassette (no header line)")
    return header, events, numbers


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _event_problem(event: dict[str, Any]) -> str | None:
    """What is wrong with one event line, or None."""
    t: object = event.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return "'t' must be a number (seconds since the connection opened)"
    if not math.isfinite(t) or t < 0:
        return f"'t' must be a finite number >= 0, not {t!r}"
    origin = event.get("from")
    if origin not in ("client", "server"):
        return f"'from' must be 'client' or 'server', not {origin!r}"
    if "end" in event:
        if event["end"] is not True or origin != "server":
            return "'end' must be true, on a server line"
        if not isinstance(event.get("exit_code", 0), int) or isinstance(
            event.get("exit_code"), bool
        ):
            return "'exit_code' must be an integer"
        if not isinstance(event.get("stderr_tail", ""), str):
            return "'stderr_tail' must be a string"
        return None
    if "message" in event:
        return None
    if isinstance(event.get("raw"), str):
        return None
    return "a line needs a 'message' (JSON), a 'raw' string or 'end': true"

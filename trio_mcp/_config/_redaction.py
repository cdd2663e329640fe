"""Secret redaction: keep interpolated config values out of trio_mcp's logs and errors.

One job. A loaded [`ServerConfig`][trio_mcp.config.ServerConfig] with values interpolated from
``${env:...}``, ``${NAME}`` or ``${input:...}`` registers itself here (`track()`) for
as long as it lives; a `logging.Filter` on every trio_mcp logger then puts the
``${...}`` templates back in place of those values in each log line and its exception.
`redact_exception()` does the same to an exception, its causes and contexts (the
group uses it on the errors it records).
"""

from __future__ import annotations

import logging
import sys
import weakref
from collections.abc import Callable
from typing import Final, Protocol, cast

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["redact_exception", "track"]


class _Redactor(Protocol):
    def redact(self, text: str) -> str: ...


# by id (a ServerConfig holds dicts: unhashable); an entry goes when its config dies
_LIVE_CONFIGS: weakref.WeakValueDictionary[int, _Redactor] = weakref.WeakValueDictionary()


def track(config: _Redactor) -> None:
    """Hide ``config``'s interpolated values from trio_mcp's log lines while it lives."""
    _LIVE_CONFIGS[id(config)] = config


_LOGGERS: Final = (
    "trio_mcp",
    "trio_mcp.auth",
    "trio_mcp.http",
    "trio_mcp.server",
    "trio_mcp.server_stderr",
    "trio_mcp.sse",
    "trio_mcp.stdio",
    "trio_mcp.websocket",
)
"""Every logger trio_mcp logs through (tests/test_config_security.py checks the list)."""


class _RedactSecrets(logging.Filter):
    """Puts ``${env:NAME}`` back in place of interpolated values in trio_mcp's log lines.

    A transport may quote its URL or a server's stderr may echo its arguments; while a
    config entry with interpolated values is alive, no trio_mcp log line shows them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        configs = list(_LIVE_CONFIGS.values())
        if not configs:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: let logging report it as usual
            return True
        redacted = message
        for config in configs:
            redacted = config.redact(redacted)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            for config in configs:
                redact_exception(record.exc_info[1], config.redact)
        return True


_FILTER: Final = _RedactSecrets()
for _name in _LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)


def redact_exception(exc: BaseException, redact: Callable[[str], str]) -> BaseException:
    """Take interpolated secrets out of an exception, its causes and contexts, in place."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in current.args)
        for attribute in ("filename", "filename2", "url", "stderr_tail", "message"):
            value = getattr(current, attribute, None)
            if isinstance(value, str):
                try:
                    setattr(current, attribute, redact(value))
                except (AttributeError, TypeError):  # read-only: leave it
                    pass
        if isinstance(current, BaseExceptionGroup):
            pending.extend(cast("BaseExceptionGroup[BaseException]", current).exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return exc

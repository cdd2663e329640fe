"""The options of a session (``open_mcp_session(...)`` keywords), checked once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import types as t
from ._eras import MODERN_VERSIONS, EraCache

__all__ = ["_Options"]


@dataclass(frozen=True, slots=True)
class _Options:
    """The session options of [`open_mcp_session()`][trio_mcp.open_mcp_session], checked once."""

    client_info: t.Implementation | None = None
    protocol: str = "auto"
    default_timeout: float | None = None
    progress_resets_timeout: bool = False
    max_timeout: float | None = None
    probe_timeout: float = 3.0
    init_timeout: float | None = 60.0
    cancel_notice_timeout: float = 1.0
    cache: bool = True
    max_input_rounds: int = 10
    max_pages: int = 1000
    notification_buffer: int = 1000
    listen_ack_timeout: float = 10.0
    max_server_requests: int = 32
    era_cache: EraCache | None = None
    output_validation: str = "report"
    tasks: bool = False
    apps: bool = False
    extensions: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        for name, settings in (self.extensions or {}).items():
            if "/" not in name or not isinstance(settings, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(
                    "open_mcp_session(): extensions maps ids like 'com.example/name' to "
                    f"settings dicts, not {name!r}: {settings!r}"
                )
        if self.output_validation not in ("report", "strict", "off"):
            raise ValueError(
                "open_mcp_session(): output_validation must be 'report', 'strict' or 'off', "
                f"not {self.output_validation!r}"
            )
        protocol = self.protocol
        if protocol not in ("auto", "legacy") and protocol not in MODERN_VERSIONS:
            raise ValueError(
                f"open_mcp_session(): protocol must be 'auto', 'legacy' or one of "
                f"{list(MODERN_VERSIONS)}, not {protocol!r}"
            )
        for name in ("default_timeout", "max_timeout", "init_timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"open_mcp_session(): {name} must be positive or None")
        for name in ("probe_timeout", "cancel_notice_timeout", "listen_ack_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"open_mcp_session(): {name} must be positive")
        for name in ("max_input_rounds", "max_pages", "max_server_requests"):
            if getattr(self, name) < 1:
                raise ValueError(f"open_mcp_session(): {name} must be at least 1")
        if self.notification_buffer < 0:
            raise ValueError("open_mcp_session(): notification_buffer must not be negative")

"""Server configuration files: the ``mcpServers`` dialect and VS Code's ``mcp.json``.

Two dialects exist in the wild:

* ``mcpServers`` (Claude Desktop's ``claude_desktop_config.json``, Cursor's
  ``.cursor/mcp.json``, Claude Code's ``.mcp.json``, Windsurf, Cline): an object of named
  entries with ``command``/``args``/``env`` or ``url``/``headers`` (and an optional
  ``type``).
* VS Code (``.vscode/mcp.json``, or the ``mcp`` key of ``settings.json``): ``servers`` with
  the same kind of entries plus ``inputs``, values the user is prompted for and that
  entries use as ``${input:id}``.

Files may have ``//`` and ``/* */`` comments and trailing commas (JSONC, as VS Code
writes them). Strings may use ``${env:NAME}``, ``${NAME}``, ``${NAME:-default}``,
``${input:id}``, ``${userHome}`` and ``${workspaceFolder}``. The document is decoded with
msgspec into typed structs; every error names the file, the key path and the problem,
never a secret's value.

Consent pinning: [`check_consent()`][trio_mcp.config.check_consent] hashes each entry as written
(command, args, env, cwd, URL, headers, type) with the contents of its ``envFile``, and asks the
application's approval callback for every entry whose hash is not already in the
[`ConsentStore`][trio_mcp.config.ConsentStore].

Values interpolated from ``${env:...}``, ``${NAME}`` and ``${input:...}`` are secrets:
reprs, a group's recorded errors and trio_mcp's log lines show the template instead
([`ServerConfig.redact()`][trio_mcp.config.ServerConfig.redact]). Stripping comments is linear in
the file's size and the nesting depth is bounded (``MAX_DEPTH``); file I/O runs off the event loop.

The work is split by job: ``_jsonc`` (comments and trailing commas), ``_interpolation``
(``${...}``), ``_envfile`` (``envFile``), ``_model`` (the typed structs), ``_loading``
([`parse_config()`][trio_mcp.config.parse_config], [`load_config()`][trio_mcp.config.load_config]),
``_redaction`` (secrets out of logs and errors) and ``_consent`` (consent pinning); this package
re-exports their names.
"""

from __future__ import annotations

from ._consent import ApprovalCallback as ApprovalCallback
from ._consent import ConsentRequest as ConsentRequest
from ._consent import ConsentStore as ConsentStore
from ._consent import FileConsentStore as FileConsentStore
from ._consent import MemoryConsentStore as MemoryConsentStore
from ._consent import check_consent as check_consent
from ._consent import consent_key as consent_key
from ._consent import pinned_parts as pinned_parts
from ._jsonc import MAX_DEPTH as MAX_DEPTH
from ._jsonc import strip_jsonc as strip_jsonc
from ._loading import load_config as load_config
from ._loading import parse_config as parse_config
from ._model import ConfigInput as ConfigInput
from ._model import Dialect as Dialect
from ._model import InputCallback as InputCallback
from ._model import MCPConfig as MCPConfig
from ._model import ServerConfig as ServerConfig
from ._model import TransportKind as TransportKind
from ._redaction import _LOGGERS as _LOGGERS  # pyright: ignore[reportPrivateUsage]
from ._redaction import redact_exception as redact_exception

__all__ = [
    "ConfigInput",
    "ConsentRequest",
    "ConsentStore",
    "FileConsentStore",
    "InputCallback",
    "MCPConfig",
    "MemoryConsentStore",
    "ServerConfig",
    "ApprovalCallback",
    "check_consent",
    "consent_key",
    "load_config",
    "parse_config",
    "pinned_parts",
    "strip_jsonc",
]

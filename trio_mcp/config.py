"""Server config files (the ``mcpServers`` dialect and VS Code's) and consent to run them.

[`load_config()`][trio_mcp.config.load_config] (also ``trio_mcp.load_config``) reads a file into an
[`MCPConfig`][trio_mcp.config.MCPConfig] of [`ServerConfig`][trio_mcp.config.ServerConfig] entries
ready to open as a group; [`parse_config()`][trio_mcp.config.parse_config] does the same from text.
[`check_consent()`][trio_mcp.config.check_consent] asks about every entry that is new or changed
since it was last approved (a [`ConsentRequest`][trio_mcp.config.ConsentRequest]), and remembers the
answers in a [`ConsentStore`][trio_mcp.config.ConsentStore]
([`FileConsentStore`][trio_mcp.config.FileConsentStore],
[`MemoryConsentStore`][trio_mcp.config.MemoryConsentStore]). An invalid file raises
[`ConfigError`][trio_mcp.config.ConfigError] (also ``trio_mcp.ConfigError``).
"""

from __future__ import annotations

from ._config import ConfigInput as ConfigInput
from ._config import ConsentRequest as ConsentRequest
from ._config import ConsentStore as ConsentStore
from ._config import FileConsentStore as FileConsentStore
from ._config import MCPConfig as MCPConfig
from ._config import MemoryConsentStore as MemoryConsentStore
from ._config import ServerConfig as ServerConfig
from ._config import check_consent as check_consent
from ._config import load_config as load_config
from ._config import parse_config as parse_config
from ._exceptions import ConfigError as ConfigError
from ._public import publish as _publish

__all__ = [
    "ConfigError",
    "ConfigInput",
    "ConsentRequest",
    "ConsentStore",
    "FileConsentStore",
    "MCPConfig",
    "MemoryConsentStore",
    "ServerConfig",
    "check_consent",
    "load_config",
    "parse_config",
]


_publish(__name__, globals(), __all__)

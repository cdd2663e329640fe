"""Server config files (the ``mcpServers`` dialect and VS Code's) and consent to run them.

:func:`load_config` (also ``trio_mcp.load_config``) reads a file into an :class:`MCPConfig`
of :class:`ServerConfig` entries ready to open as a group; :func:`parse_config` does the same
from text. :func:`check_consent` asks about every entry that is new or changed since it was last
approved (a :class:`ConsentRequest`), and remembers the answers in a :class:`ConsentStore`
(:class:`FileConsentStore`, :class:`MemoryConsentStore`). An invalid file raises
:class:`ConfigError` (also ``trio_mcp.ConfigError``).
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

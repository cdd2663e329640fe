"""trio_mcp: a Trio-native client for the Model Context Protocol, both protocol eras.

Start with :func:`open_mcp_session`::

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, ["python", "-m", "server"]) as session:
            tools = await session.list_tools()
"""

from ._exceptions import ConnectionClosed as ConnectionClosed
from ._exceptions import HeaderMismatchError as HeaderMismatchError
from ._exceptions import HTTPStatusError as HTTPStatusError
from ._exceptions import InputRequestError as InputRequestError
from ._exceptions import MCPError as MCPError
from ._exceptions import MessageTooLargeError as MessageTooLargeError
from ._exceptions import MissingClientCapabilityError as MissingClientCapabilityError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import ResourceNotFoundError as ResourceNotFoundError
from ._exceptions import ServerError as ServerError
from ._exceptions import ToolError as ToolError
from ._exceptions import TransportError as TransportError
from ._exceptions import UnsupportedProtocolVersionError as UnsupportedProtocolVersionError
from ._handlers import HandlerError as HandlerError
from ._handlers import RequestContext as RequestContext
from ._session import ClientSession as ClientSession
from ._session import Notification as Notification
from ._session import open_mcp_session as open_mcp_session
from ._transports._base import MessageInfo as MessageInfo
from ._transports._base import RequestFailed as RequestFailed
from ._transports._base import Transport as Transport
from ._transports._base import TransportFactory as TransportFactory
from ._transports._stdio import StdioParameters as StdioParameters

from ._types import *  # noqa: F403  (temporary; explicit list generated later)

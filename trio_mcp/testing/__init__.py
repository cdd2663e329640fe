"""A scriptable in-process MCP server for testing MCP clients (both protocol eras).

[`MockServer`][trio_mcp.testing.MockServer] is to trio_mcp what ``httpx.MockTransport`` is to httpx:
register tools, resources and prompts, connect a session to it in memory (it is a transport
factory), script notifications, crashes and era-probe answers, and inspect what the client sent:

```python
from trio_mcp.testing import MockServer, ToolContext

server = MockServer(eras="both")

@server.tool(description="Echo the text back")
async def echo(ctx: ToolContext, text: str) -> str:
    await ctx.progress(1, 1)
    return text

async with trio.open_nursery() as nursery:
    async with trio_mcp.open_mcp_session(nursery, server) as session:
        result = await session.call_tool("echo", {"text": "hi"})
```

``python -m trio_mcp.testing [--era both|legacy|modern]`` serves
[`demo_server()`][trio_mcp.testing.demo_server] over stdio, for subprocess tests.
"""

from .._exceptions import CassetteError as CassetteError
from .._public import publish as _publish
from ._cassette import load_cassette as load_cassette
from ._checker import CHECKS as CHECKS
from ._checker import TransportContractError as TransportContractError
from ._checker import check_transport as check_transport
from ._checker import echo_server as echo_server
from ._context import ToolContext as ToolContext
from ._demo import demo_server as demo_server
from ._faults import DEFAULT_CRASH_STDERR as DEFAULT_CRASH_STDERR
from ._faults import Faults as Faults
from ._faults import FaultyStream as FaultyStream
from ._faults import Match as Match
from ._faults import MockClientTransport as MockClientTransport
from ._http import MockHTTPServer as MockHTTPServer
from ._recorder import Recorder as Recorder
from ._replay import CassetteMismatch as CassetteMismatch
from ._replay import ReplayServer as ReplayServer
from ._scrub import REDACTED as REDACTED
from ._scrub import is_secret_name as is_secret_name
from ._scrub import scrub as scrub
from ._server import MockServer as MockServer
from ._tasks import MockTask as MockTask
from ._wire import ClientRequestError as ClientRequestError
from ._wire import ServerCrash as ServerCrash
from ._wire import ServerStream as ServerStream

__all__ = [
    "CHECKS",
    "CassetteError",
    "CassetteMismatch",
    "ClientRequestError",
    "DEFAULT_CRASH_STDERR",
    "Faults",
    "FaultyStream",
    "Match",
    "MockClientTransport",
    "MockHTTPServer",
    "MockServer",
    "MockTask",
    "REDACTED",
    "Recorder",
    "ReplayServer",
    "ServerCrash",
    "ServerStream",
    "ToolContext",
    "TransportContractError",
    "check_transport",
    "demo_server",
    "echo_server",
    "is_secret_name",
    "load_cassette",
    "scrub",
]

_publish(__name__, globals(), __all__)

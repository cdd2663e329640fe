"""The trap the plugin explains: an autojump clock with a real subprocess.

Not collected by default (see pytest.ini); trio_mcp's own tests run it and expect it to fail
with the plugin's hint in the report.
"""

from __future__ import annotations

import sys

import trio
import trio.testing

import trio_mcp


async def test_real_process_under_autojump(mcp_clock: trio.testing.MockClock) -> None:
    async with trio_mcp.open_mcp_session(
        [sys.executable, "-c", "import time; time.sleep(5)"], init_timeout=1
    ) as session:
        await session.ping()

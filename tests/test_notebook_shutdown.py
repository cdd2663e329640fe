"""A Jupyter kernel shut down with sessions still open: their servers do not survive it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.test_bridges_lifecycle import ROOT, STUBBORN, check_server_gone, read_pid


@pytest.mark.notebook
@pytest.mark.timeout(90)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_client's own
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_kernel_shutdown_with_open_sessions_ends_their_servers(tmp_path: Path) -> None:
    import nbclient
    import nbformat

    asyncio_pid, blocking_pid = tmp_path / "asyncio.pid", tmp_path / "blocking.pid"
    cells = [
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nimport trio_mcp",
        # The asyncio bridge on the kernel's own loop, entered and never left.
        f"held = trio_mcp.open_asyncio_session([sys.executable, {str(STUBBORN)!r}, "
        f"{str(asyncio_pid)!r}])\nsession = await held.__aenter__()\n"
        "print(len(await session.list_tools()) > 0)",
        # A blocking session, never closed.
        f"blocking = trio_mcp.open_blocking_session([sys.executable, {str(STUBBORN)!r}, "
        f"{str(blocking_pid)!r}])\nprint(len(blocking.list_tools()) > 0)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook, timeout=30, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()  # runs the cells, then shuts the kernel down
    outputs = ["".join(o.get("text", "") for o in cell.outputs) for cell in notebook.cells]
    assert outputs[1:] == ["True\n", "True\n"]
    for pidfile in (asyncio_pid, blocking_pid):
        check_server_gone(read_pid(pidfile))

"""A real notebook, executed with nbclient on an IPython kernel: the blocking client and the
asyncio bridge (guest mode on the kernel's own asyncio loop) in cells."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = Path(__file__).with_name("notebooks") / "blocking_and_asyncio.ipynb"


def _text(cell: Any) -> str:
    return "".join(
        output.get("text", "")
        for output in cell.get("outputs", [])
        if output.get("name") == "stdout"
    )


@pytest.mark.notebook
@pytest.mark.timeout(60)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_client's own
def test_notebook_runs_the_blocking_client_and_the_asyncio_bridge() -> None:
    import nbclient
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=30,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outputs = [_text(cell) for cell in code]
    errors = [
        o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert errors == []
    assert outputs[1].startswith("trio-mcp-demo ['echo', 'add', 'slow']")
    assert outputs[2] == "from a cell\n"
    assert outputs[3] == "timed out\nclosed: True\n"
    assert outputs[4] == "sum: 5\ncancelled by asyncio\nstill usable\n"
    assert elapsed < 30, elapsed

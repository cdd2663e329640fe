"""Every ```python block in docs/ runs (tests/docs_harness.py says how), page by page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HARNESS = ROOT / "tests" / "docs_harness.py"
PAGES = sorted(page for page in DOCS.glob("*.md") if "```python" in page.read_text("utf-8"))


def test_pages_with_examples_exist() -> None:
    assert len(PAGES) > 15


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    # A config file for the pages that load one: the docs server, as a "github" server.
    server = {"command": sys.executable, "args": [str(HARNESS), "--serve"]}
    config = {"mcpServers": {"github": server}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config), encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(HARNESS), str(page)],
        cwd=tmp_path,
        env=env,
        input="Ada\n" * 20,  # for the examples that ask with input()
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"

"""Every Python example in docs/ compiles and names only what trio_mcp exports.

Examples that need a real remote server (authorization flows against an identity provider,
for instance) cannot run here; this catches the breakage a user would hit first: a syntax
error or a ``trio_mcp.Name`` that does not exist (renamed, never exported). The examples
that can run are run by ``tests/test_issue11_docs.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import trio_mcp

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_NAME = re.compile(r"\btrio_mcp\.([A-Za-z_][A-Za-z0-9_]*)")
_EXAMPLES = [
    pytest.param(block, id=f"{page.name}:{number}")
    for page in sorted(DOCS.glob("*.md"))
    for number, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8")))
]


@pytest.mark.parametrize("source", _EXAMPLES)
def test_docs_example_compiles_and_names_exist(source: str) -> None:
    compile(source, "<docs example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    missing = sorted(
        name
        for name in set(_NAME.findall(source))
        if not hasattr(trio_mcp, name)
        and name not in ("testing", "cli", "demo")  # subpackages and modules
    )
    assert not missing, f"the example uses trio_mcp names that do not exist: {missing}"

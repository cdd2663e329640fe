"""Every Python example in docs/ compiles and names only what trio_mcp exports.

Examples that need a real remote server (authorization flows against an identity provider,
for instance) cannot run here; this catches the breakage a user would hit first: a syntax
error or a ``trio_mcp.Name`` that does not exist (renamed, never exported). The examples
that can run are run by ``tests/test_issue11_docs.py``.
"""

from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import pytest

import trio_mcp

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_NAME = re.compile(r"\btrio_mcp((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_EXAMPLES = [
    pytest.param(block, id=f"{page.name}:{number}")
    for page in sorted(DOCS.glob("*.md"))
    for number, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8")))
]


def _exists(path: str) -> bool:
    """Whether ``trio_mcp.<path>`` exists, walking into public namespaces (``auth.OAuth``).

    An old spelling of a moved name warns, and pytest turns the warning into an error.
    """
    obj: object = trio_mcp
    for part in path.split("."):
        if not isinstance(obj, types.ModuleType):
            return True  # an attribute of a class or a value: not ours to check here
        if part in ("testing", "cli", "demo") and obj is trio_mcp:
            obj = importlib.import_module(f"trio_mcp.{part}")
            continue
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("source", _EXAMPLES)
def test_docs_example_compiles_and_names_exist(source: str) -> None:
    tree = compile(
        source, "<docs example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
    )
    missing = sorted(path for path in set(_NAME.findall(source)) if not _exists(path[1:]))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trio_mcp"):
            module = importlib.import_module(node.module or "")
            missing += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if not hasattr(module, alias.name)
            ]
    assert not missing, f"the example uses trio_mcp names that do not exist: {missing}"

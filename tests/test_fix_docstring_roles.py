"""scripts/fix_docstring_roles.py: Sphinx markup in docstrings becomes what mkdocstrings renders.

The script is re-run after merges, so every rewrite must be right and idempotent: a second
run changes nothing.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("griffe", reason="griffe comes with mkdocstrings (the ci env has it)")


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fix_docstring_roles", ROOT / "scripts" / "fix_docstring_roles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fix = _script()


@pytest.fixture(scope="module")
def resolver() -> Any:
    return fix.Resolver()


def _roles(source: str, resolver: Any, module: str = "trio_mcp._session") -> str:
    unresolved: list[str] = []
    return str(fix.rewrite_roles(source, module, resolver, unresolved))


def test_a_role_becomes_a_link_to_the_public_path(resolver: Any) -> None:
    source = '"""Open a :class:`ClientSession` with :func:`~trio_mcp.open_mcp_session`."""\n'
    assert _roles(source, resolver) == (
        '"""Open a [`ClientSession`][trio_mcp.ClientSession] with\n'
        '[`open_mcp_session()`][trio_mcp.open_mcp_session]."""\n'
    )


def test_a_mixin_method_links_to_client_session_and_a_namespace_name_to_its_namespace(
    resolver: Any,
) -> None:
    source = '"""See :meth:`ToolsAPI.call_tool` and :class:`OAuth`."""\n'
    done = _roles(source, resolver, "trio_mcp._session_tools")
    assert "[`ToolsAPI.call_tool()`][trio_mcp.ClientSession.call_tool]" in done
    assert "[`OAuth`][trio_mcp.auth.OAuth]" in done


def test_names_with_no_reference_entry_become_plain_code(resolver: Any) -> None:
    source = '"""Raises :exc:`trio.TooSlowError`; see :class:`~trio_mcp._rpc.RPCConnection`."""\n'
    assert _roles(source, resolver) == '"""Raises `trio.TooSlowError`; see `RPCConnection`."""\n'


def test_a_line_made_too_long_is_rewrapped_into_its_paragraph(resolver: Any) -> None:
    words = "word " * 14
    source = (
        "def f():\n"
        f'    """Summary.\n\n    A {words}:class:`ClientSession` and more\n'
        '    words of the same paragraph.\n    """\n'
    )
    done = _roles(source, resolver)
    assert all(len(line) <= 100 for line in done.splitlines())
    assert " ".join(done.split()) == " ".join(
        source.replace(
            ":class:`ClientSession`", "[`ClientSession`][trio_mcp.ClientSession]"
        ).split()
    )


def test_a_literal_block_becomes_a_fenced_block() -> None:
    source = (
        'def f():\n    """Do it.\n\n    Example::\n\n        x = await f()\n\n'
        '    The tree::\n\n        a\n        └── b\n    """\n'
    )
    done = fix.rewrite_literal_blocks(source)
    assert done == (
        'def f():\n    """Do it.\n\n    For example:\n\n    ```python\n    x = await f()\n'
        '    ```\n\n    The tree:\n\n    ```text\n    a\n    └── b\n    ```\n    """\n'
    )
    assert fix.rewrite_literal_blocks(done) == done


def test_an_attribute_comment_becomes_its_docstring() -> None:
    source = "class A:\n    #: The size,\n    #: in bytes.\n    size: int = 0\n    other = 1\n"
    done = fix.rewrite_attribute_comments(source)
    assert done == 'class A:\n    size: int = 0\n    """The size, in bytes."""\n    other = 1\n'
    assert fix.rewrite_attribute_comments(done) == done


def test_the_sources_have_no_sphinx_markup_left() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fix_docstring_roles.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"run scripts/fix_docstring_roles.py:\n{done.stdout}"

"""Run every ```python block of one docs page, in order, the way a reader would.

``python tests/docs_harness.py docs/PAGE.md`` (``tests/test_docs_run.py`` runs it for every
page, each in its own process and scratch folder). A page's blocks share one namespace, so a
block may use what an earlier block of the same page defined. How a block runs:

* a whole program (it calls ``trio.run(`` or ``asyncio.run(``) runs as ``__main__``;
* a block that defines ``test_*`` functions is a pytest module: the page's test blocks are
  written, in order, to one file (a block starting ``# conftest.py`` to ``conftest.py``) and
  run with pytest and pytest-trio;
* a block with ``await`` or ``async with`` at top level runs inside ``trio.run`` (or
  ``asyncio.run`` on a page that says ``<!-- docs-run: asyncio -->``), where the names a
  docs fragment takes for granted exist (see :func:`_trio_names`): ``session`` (connected to
  the docs server below), ``nursery``, ``target``, ``options``, ``result``, ``policy``,
  ``my_llm``, ``ask_user``, ``my_httpx_async_client``;
* any other block runs as it is, outside an event loop (the blocking API's pages).

The docs server is trio_mcp's demo server plus the tools the docs call (``search``,
``build``, ``x``, ``render_video``). The documentation's placeholder host ``example.com``
(RFC 2606) is served by that server over in-process HTTP, so the HTTP examples run for real
without a network. Where a stand-in exists (a model, an identity provider), it is named in
:func:`_trio_names` and documented there.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import hashlib
import inspect
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext, demo_server

BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
EXAMPLE_HOST = re.compile(r"^(https?|wss?)://([a-z0-9-]+\.)*example\.com(?=[/:]|$)")


def docs_server() -> MockServer:
    """The demo server plus the tools and prompts the docs pages call."""
    server = demo_server()

    @server.tool(description="Search for a query.")
    async def search(ctx: ToolContext, q: str = "") -> str:
        return f"results for {q}"

    @server.tool(description="Build, reporting progress.")
    async def build(ctx: ToolContext) -> str:
        for step in range(1, 4):
            await ctx.progress(step, 3, f"step {step}")
        return "built"

    @server.tool(description="A tool named x.")
    async def x(ctx: ToolContext) -> str:
        return "x"

    @server.tool(description="Render a video (a task).", task="optional")
    async def render_video(ctx: ToolContext, id: int = 0) -> str:
        return f"video {id}"

    asked: list[bool] = []

    @server.tool(description="Needs an account connected first (URL elicitation).")
    async def read_files(ctx: ToolContext) -> str:
        if not asked:
            asked.append(True)
            needed = {
                "mode": "url",
                "elicitationId": "connect-1",
                "url": "https://accounts.example.com/connect",
                "message": "Connect your account",
            }
            raise trio_mcp.ServerError(-32042, "connect first", {"elicitations": [needed]})
        return "files"

    skill = "---\nname: pdf\ndescription: Work with PDFs\n---\n# PDF\n"
    server.add_resource("skill://pdf/SKILL.md", text=skill)
    entry = {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Work with PDFs"},
        "resources": [
            {
                "uri": "skill://pdf/SKILL.md",
                "digest": "sha256:" + hashlib.sha256(skill.encode()).hexdigest(),
                "size": len(skill),
            }
        ],
    }
    server.add_method("skills/list", lambda params: {"skills": [entry]})
    server.add_resource("file:///x", text="x")
    server.add_resource("file:///config.json", text="{}")
    return server


# -- example.com is served by the docs server over in-process HTTP --------------------------


def _is_example(target: Any) -> bool:
    url = target.url if isinstance(target, trio_mcp.StreamableHTTPParameters) else target
    return isinstance(url, str) and EXAMPLE_HOST.match(url) is not None


@asynccontextmanager
async def _over_example_http(
    real: Any, nursery: trio.Nursery | None, target: Any, *args: Any, **kwargs: Any
) -> AsyncGenerator[Any, None]:
    """``open_mcp_session`` to an ``example.com`` URL: the docs server, over in-process HTTP."""
    async with trio.open_nursery() as own:
        async with docs_server().open_http(own) as http:
            if isinstance(target, trio_mcp.StreamableHTTPParameters):
                target = dataclasses.replace(target, url=http.url, client=http.client)
            else:
                target = trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
            where = (nursery,) if nursery is not None else ()
            async with real(*where, target, *args, **kwargs) as session:
                yield session
        own.cancel_scope.cancel()


def _patch_open_mcp_session() -> None:
    real = trio_mcp.open_mcp_session

    def open_mcp_session(*args: Any, **kwargs: Any) -> Any:
        nursery = args[0] if args and isinstance(args[0], trio.Nursery) else None
        rest = args[1:] if nursery is not None else args
        if rest and _is_example(rest[0]):
            return _over_example_http(real, nursery, *rest, **kwargs)
        return real(*args, **kwargs)

    trio_mcp.open_mcp_session = open_mcp_session  # type: ignore[assignment]


# -- the names a docs fragment takes for granted ------------------------------------------


async def my_llm(messages: Any, max_tokens: int | None = None) -> str:
    """Stand-in for the reader's own model call."""
    return "a reply"


async def ask_user(message: str, schema: Any) -> dict[str, Any]:
    """Stand-in for the reader's own form (it declines: an empty answer)."""
    return {}


def open_in_browser(url: str) -> None:
    """Stand-in for the reader's own browser call (never opens anything here)."""


def _common_names() -> dict[str, Any]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-docs-example")
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-docs-example")
    return {
        "trio": trio,
        "trio_mcp": trio_mcp,
        "sys": sys,
        "os": os,
        "my_llm": my_llm,
        "ask_user": ask_user,
        "open_in_browser": open_in_browser,
        "result": trio_mcp.CallToolResult(content=[trio_mcp.TextContent(text="hi")]),
        "options": {},
        "url": "https://mcp.example.com/mcp",
        "policy": trio_mcp.RetryPolicy(max_attempts=2),
    }


def _top_level_async(source: str) -> bool:
    code = compile(source, "<block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return bool(code.co_flags & inspect.CO_COROUTINE)


_HARNESS_NAMES = {"server", "target", "nursery", "session", "my_httpx_async_client"}


async def _run_trio_block(code: types.CodeType, namespace: dict[str, Any]) -> None:
    server = docs_server()
    async with trio.open_nursery() as nursery:
        async with server.open_http(nursery) as http:
            async with trio_mcp.open_mcp_session(nursery, server, tasks=True) as session:
                names = {
                    "server": server,
                    "target": server,
                    "nursery": nursery,
                    "session": session,
                    "result": await session.call_tool("echo", {"text": "hi"}),
                    "my_httpx_async_client": http.client,
                }
                # Fresh every block (an earlier block's session is closed by now); a
                # name the page defined itself stays.
                for key, value in names.items():
                    if key not in namespace or key in _HARNESS_NAMES:
                        namespace[key] = value
                try:
                    with trio.fail_after(60):
                        ran = eval(code, namespace)  # a coroutine if it has top-level await
                        if inspect.iscoroutine(ran):
                            await ran
                finally:
                    for key in _HARNESS_NAMES:
                        namespace.pop(key, None)
        nursery.cancel_scope.cancel()


def _command() -> list[str]:
    """The docs server as a stdio command (for the blocking and asyncio examples)."""
    return [sys.executable, str(Path(__file__).resolve()), "--serve"]


def _needs_trio_names(source: str, page: str) -> bool:
    """A plain block that uses the trio harness's ``nursery``/``session`` (not a blocking one)."""
    if "blocking" in source or "<!-- docs-run: blocking -->" in page:
        return False
    return bool(re.search(r"\b(nursery|session)\b", source))


def _run_plain_block(code: types.CodeType, source: str, namespace: dict[str, Any]) -> None:
    """Run a block outside any event loop; ``session`` is a blocking session if it needs one."""
    namespace["target"] = _command()
    if re.search(r"\bsession\b", source) and not re.search(r"\bas session\b", source):
        with trio_mcp.open_blocking_session(namespace["target"]) as session:
            namespace["session"] = session
            exec(code, namespace)
        return
    exec(code, namespace)


def _run_asyncio_block(code: types.CodeType, namespace: dict[str, Any]) -> None:
    namespace["target"] = _command()
    namespace.setdefault("asyncio", asyncio)

    async def main() -> None:
        ran = eval(code, namespace)
        if inspect.iscoroutine(ran):
            await asyncio.wait_for(ran, 60)

    asyncio.run(main())


def _run_pytest(blocks: list[str], folder: Path) -> None:
    conftest = [b for b in blocks if b.lstrip().startswith("# conftest.py")]
    tests = [b for b in blocks if b not in conftest]
    header = (
        "import pytest\nimport trio\nimport trio.testing\nimport trio_mcp\n"
        "from trio_mcp.testing import MockServer, ToolContext\n\n"
    )
    (folder / "conftest.py").write_text("\n\n".join(conftest), encoding="utf-8")
    (folder / "test_docs_page.py").write_text(header + "\n\n".join(tests), encoding="utf-8")
    (folder / "pytest.ini").write_text(
        "[pytest]\ntrio_mode = true\nfilterwarnings = error\n", encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or " passed" not in done.stdout:
        raise AssertionError(f"the page's tests failed:\n{done.stdout}\n{done.stderr}")
    print(done.stdout.strip().splitlines()[-1])


def _write_example_files(folder: Path) -> None:
    """Files the examples open by name: a client's private key (``svc-key.pem``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (folder / "svc-key.pem").write_bytes(pem)


def run_page(page: Path, folder: Path) -> None:
    """Run every block of ``page`` in order (see the module docstring); raise on a failure."""
    text = page.read_text(encoding="utf-8")
    _write_example_files(folder)
    asyncio_page = "<!-- docs-run: asyncio -->" in text
    blocks = BLOCK.findall(text)
    _patch_open_mcp_session()
    namespace: dict[str, Any] = {"__name__": "__docs__", **_common_names()}
    test_blocks: list[str] = []
    for number, source in enumerate(blocks):
        where = f"{page.name} block {number}"
        if re.search(r"^(async )?def test_", source, re.MULTILINE) or source.lstrip().startswith(
            "# conftest.py"
        ):
            test_blocks.append(textwrap.dedent(source))
            print(f"{where}: a pytest module (run below)")
            continue
        try:
            if "trio.run(" in source or "asyncio.run(" in source:
                # a whole program; ``target``, the docs' placeholder, is the docs server
                program = {"__name__": "__main__", "target": _command()}
                exec(compile(source, where, "exec"), program)
            elif _top_level_async(source) or _needs_trio_names(source, text):
                code = compile(source, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                if asyncio_page:
                    _run_asyncio_block(code, namespace)
                else:
                    trio.run(_run_trio_block, code, namespace)
            else:
                _run_plain_block(compile(source, where, "exec"), source, namespace)
        except BaseException as exc:
            raise AssertionError(f"{where} failed: {exc!r}\n---\n{source}") from exc
        print(f"{where}: ran")
    if test_blocks:
        _run_pytest(test_blocks, folder)


def main(argv: list[str]) -> int:
    """Run one page given as ``argv[1]`` in the current folder; ``--serve``: the docs server.

    Returns:
        The exit status: 0 on success (a failure raises).
    """
    if argv[1] == "--serve":  # the docs server over stdio, for the config files of the pages
        trio.run(docs_server().serve_stdio)
        return 0
    run_page(Path(argv[1]).resolve(), Path.cwd())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

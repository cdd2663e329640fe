"""The bridges' public API is generated from ClientSession's (scripts/gen_bridges.py)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from trio_mcp import AsyncioSession, BlockingSession, ClientSession

ROOT = Path(__file__).resolve().parent.parent


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_bridges", ROOT / "scripts" / "gen_bridges.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_bridges"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["gen_bridges"]
    return module


gen = load_generator()


@pytest.mark.parametrize("bridge", gen.BRIDGES, ids=lambda b: b.module)
def test_generated_bridges_are_up_to_date(bridge: object) -> None:
    """Fails when ClientSession changed and `python scripts/gen_bridges.py` was not run."""
    path = ROOT / "trio_mcp" / f"{bridge.module}.py"  # type: ignore[attr-defined]
    assert path.read_text() == gen.render(bridge), (
        f"{path.name} is stale: run python scripts/gen_bridges.py"
    )


def test_check_mode_reports_fresh_files() -> None:
    assert gen.main(["--check"]) == 0


NEW_METHODS = '''
    async def frobnicate(
        self, target: str, *, level: int = 1, timeout: float | None = None
    ) -> t.EmptyResult:
        """Frobnicate ``target``.

        Args:
            target: What to frobnicate.
            level: How hard.
            timeout: Seconds before :class:`trio.TooSlowError`.

        Returns:
            The server's answer.
        """
        raise NotImplementedError

    def on_frob(self, callback: Callable[[str], Any]) -> Callable[[], None]:
        """Call ``callback`` on each frob.

        Args:
            callback: Called with the frob.

        Returns:
            A function that removes the callback again.
        """
        raise NotImplementedError

    @asynccontextmanager
    async def watch_frobs(
        self, *names: str, buffer: int | None = None
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        """Receive frobs while the block runs.

        Args:
            *names: Only these.
            buffer: How many may wait unread.

        Yields:
            A channel of frobs.
        """
        raise NotImplementedError
        yield
'''


def with_new_methods() -> str:
    source = (ROOT / "trio_mcp" / "_session.py").read_text()
    anchor = "    async def aclose(self) -> None:\n"
    assert source.count(anchor) == 1
    return source.replace(anchor, NEW_METHODS.lstrip("\n") + "\n" + anchor)


def generated_class(text: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(text)
    (cls,) = (node for node in tree.body if isinstance(node, ast.ClassDef))
    return {
        node.name: node
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_a_method_added_to_client_session_reaches_both_bridges() -> None:
    """An async method, a listener registration and an async context manager, no other edit."""
    source = with_new_methods()
    blocking = gen.render(gen.BLOCKING, source)
    asyncio_ = gen.render(gen.ASYNCIO, source)
    compile(blocking, "_blocking_api.py", "exec")
    compile(asyncio_, "_asyncio_api.py", "exec")
    b, a = generated_class(blocking), generated_class(asyncio_)

    assert isinstance(b["frobnicate"], ast.FunctionDef)  # blocks the calling thread
    assert isinstance(a["frobnicate"], ast.AsyncFunctionDef)  # awaited from asyncio
    assert ast.unparse(b["frobnicate"].args) == (
        "self, target: str, *, level: int=1, timeout: float | None=None"
    )
    assert ast.unparse(b["frobnicate"].returns) == "t.EmptyResult"  # type: ignore[arg-type]
    assert "self._runner.call('frobnicate()', self._session.frobnicate, target, level=level" in (
        " ".join(ast.unparse(b["frobnicate"]).split())
    )
    assert "await self._bridge.call(self._session.frobnicate, target, level=level" in (
        " ".join(ast.unparse(a["frobnicate"]).split())
    )

    # a listener: wrapped so plain functions work, the remover usable from any thread
    assert "self._remover(self._run_sync('on_frob()', self._session.on_frob, " in (
        " ".join(ast.unparse(b["on_frob"]).split())
    )
    assert "self._callback(callback)" in ast.unparse(b["on_frob"])
    assert "self._deliver(callback)" in ast.unparse(a["on_frob"])

    # an async context manager: a (async) context manager of the bridge's stream type
    assert ast.unparse(b["watch_frobs"].returns) == (  # type: ignore[arg-type]
        "AbstractContextManager[BlockingNotifications]"
    )
    assert ast.unparse(a["watch_frobs"].returns) == (  # type: ignore[arg-type]
        "AbstractAsyncContextManager[AsyncioNotifications]"
    )
    assert "self._stream" in ast.unparse(b["watch_frobs"])

    for text in (blocking, asyncio_):
        assert "do not edit" in text.splitlines()[0]
    assert "Blocking twin of :meth:`ClientSession.frobnicate`" in blocking
    assert "Asyncio twin of :meth:`ClientSession.frobnicate`" in asyncio_


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


@pytest.mark.parametrize(
    ("cls", "note", "awaitable"),
    [(BlockingSession, "Blocking twin", False), (AsyncioSession, "Asyncio twin", True)],
)
def test_generated_methods_have_real_signatures_and_docstrings(
    cls: type, note: str, awaitable: bool
) -> None:
    methods = public_methods(cls)
    assert len(methods) >= 25
    session_methods = public_methods(ClientSession)
    for name, method in methods.items():
        doc = inspect.getdoc(method)
        assert doc is not None, name
        assert f"{note} of :meth:`ClientSession.{name}`" in doc, name
        assert doc.splitlines()[0] == inspect.getdoc(session_methods[name]).splitlines()[0]  # type: ignore[union-attr]
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        if params:
            assert "Args:" in doc, name
        for param in params:
            assert f"    {param}:" in doc or f"    *{param}:" in doc, (name, param)
        if inspect.iscoroutinefunction(session_methods[name]):
            assert inspect.iscoroutinefunction(method) is awaitable, name
    assert "blocks the calling thread" in textwrap.dedent(
        inspect.getdoc(BlockingSession.list_tools) or ""
    )
    assert "returns an asyncio awaitable" in (inspect.getdoc(AsyncioSession.list_tools) or "")


def test_check_mode_fails_on_a_stale_file_and_a_run_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "trio_mcp"
    package.mkdir()
    for name in (
        "_session.py",
        "_blocking.py",
        "_asyncio.py",
        "_blocking_api.py",
        "_asyncio_api.py",
    ):
        (package / name).write_text((ROOT / "trio_mcp" / name).read_text())
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "PACKAGE", package)
    assert gen.main(["--check"]) == 0

    (package / "_session.py").write_text(with_new_methods())  # ClientSession grew, no regeneration
    assert gen.main(["--check"]) == 1
    assert "stale: trio_mcp/_blocking_api.py, trio_mcp/_asyncio_api.py" in capsys.readouterr().out
    assert (
        "def frobnicate" not in (package / "_blocking_api.py").read_text()
    )  # --check writes nothing

    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert "def frobnicate(" in (package / "_blocking_api.py").read_text()
    assert "async def frobnicate(" in (package / "_asyncio_api.py").read_text()


def test_a_callable_parameter_no_rule_covers_stops_the_generator() -> None:
    """A new kind of callback would silently reach the session unwrapped: refuse instead."""
    source = with_new_methods().replace(
        "self, target: str, *, level: int = 1,",
        "self, target: str, *, on_frob: FrobCallback | None = None, level: int = 1,",
    )
    with pytest.raises(SystemExit, match=r"frobnicate\(on_frob: FrobCallback \| None\).*CALLBACKS"):
        gen.render(gen.BLOCKING, source)


def test_a_trio_object_yielded_without_a_wrapper_stops_the_generator() -> None:
    source = with_new_methods().replace(
        'AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:\n        """Receive frobs',
        'AsyncGenerator[trio.MemoryReceiveChannel[str], None]:\n        """Receive frobs',
    )
    with pytest.raises(SystemExit, match=r"yields trio\.MemoryReceiveChannel\[str\].*YIELDS"):
        gen.render(gen.ASYNCIO, source)

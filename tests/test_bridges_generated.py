"""The bridges' public API is generated from ClientSession's (scripts/gen_bridges.py)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
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


GENERATED = [(bridge, name) for bridge in gen.BRIDGES for name in gen.render(bridge)]


@pytest.mark.parametrize(("bridge", "name"), GENERATED, ids=[name for _, name in GENERATED])
def test_generated_bridges_are_up_to_date(bridge: object, name: str) -> None:
    """Fails when ClientSession changed and `python scripts/gen_bridges.py` was not run."""
    path = ROOT / "trio_mcp" / name
    assert path.read_text() == gen.render(bridge)[name], (
        f"{path.name} is stale: run python scripts/gen_bridges.py"
    )


def test_the_bridges_are_split_like_client_session() -> None:
    """One generated module per area of ClientSession, in each bridge; none over 600 lines."""
    areas = [(area.module, area.name) for area in gen.read_areas()]
    assert areas == [
        ("_session", "ClientSession"),
        ("_session_tools", "ToolsAPI"),
        ("_session_features", "FeaturesAPI"),
        ("_session_notifications", "NotificationsAPI"),
    ]
    for bridge in gen.BRIDGES:
        assert sorted(gen.render(bridge)) == sorted(
            f"{bridge.module}{suffix}.py"
            for suffix in ("", "_tools", "_features", "_notifications")
        )
        assert gen.generated_files(bridge) == set(gen.render(bridge))
    assert [cls.__name__ for cls in BlockingSession.__mro__[:4]] == [
        "BlockingSession",
        "BlockingToolsAPI",
        "BlockingFeaturesAPI",
        "BlockingNotificationsAPI",
    ]
    for _, name in GENERATED:
        assert len((ROOT / "trio_mcp" / name).read_text().splitlines()) <= 600, name
    for module, _ in areas:
        assert len((ROOT / "trio_mcp" / f"{module}.py").read_text().splitlines()) <= 600, module


def test_every_public_member_comes_from_the_first_class_of_the_mro_defining_it() -> None:
    """The generator reads ClientSession's mixins (by ast) as Python resolves them."""
    read = {m.name: area.name for area in gen.read_areas() for m in area.members}
    for name in read:
        owner = next(cls for cls in ClientSession.__mro__ if name in vars(cls))
        assert owner.__name__ == read[name], name
    assert set(read) == {n for n in dir(ClientSession) if not n.startswith("_")}


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
            timeout: Seconds before `trio.TooSlowError`.

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


def with_new_methods() -> dict[str, str]:
    """ClientSession's own source, with NEW_METHODS added."""
    source = (ROOT / "trio_mcp" / "_session.py").read_text()
    anchor = "    async def aclose(self) -> None:\n"
    assert source.count(anchor) == 1
    return {"_session.py": source.replace(anchor, NEW_METHODS.lstrip("\n") + "\n" + anchor)}


def with_new_methods_in_a_mixin() -> dict[str, str]:
    """The tools mixin's source, with NEW_METHODS added (and what they name imported)."""
    source = (ROOT / "trio_mcp" / "_session_tools.py").read_text()
    anchor = "    async def list_tasks(self"
    assert source.count(anchor) == 1
    source = source.replace(anchor, NEW_METHODS.lstrip("\n") + "\n" + anchor)
    source = source.replace(
        "from . import types as t\n",
        "import trio\n\nfrom . import types as t\nfrom ._subscriptions import Notification\n",
    ).replace("from collections.abc import ", "from collections.abc import Callable, ")
    return {"_session_tools.py": source}


def generated_class(text: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(text)
    (cls,) = (node for node in tree.body if isinstance(node, ast.ClassDef))
    return {
        node.name: node
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


@pytest.mark.parametrize(
    ("sources", "suffix"),
    [(with_new_methods, ""), (with_new_methods_in_a_mixin, "_tools")],
    ids=["ClientSession", "ToolsAPI"],
)
def test_a_method_added_to_client_session_reaches_both_bridges(
    sources: Callable[[], dict[str, str]], suffix: str
) -> None:
    """An async method, a listener registration and an async context manager, no other edit:
    in ClientSession itself, or in one of its mixins (then in that mixin's bridge module)."""
    blocking = gen.render(gen.BLOCKING, sources())[f"_blocking_api{suffix}.py"]
    asyncio_ = gen.render(gen.ASYNCIO, sources())[f"_asyncio_api{suffix}.py"]
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
    link = "[`ClientSession.frobnicate()`][trio_mcp.ClientSession.frobnicate]"
    assert f"Blocking twin of\n        {link}" in blocking
    assert f"Asyncio twin of\n        {link}" in asyncio_


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """The public methods of ``cls``, inherited ones too (the mixins' twins)."""
    methods: dict[str, Callable[..., Any]] = {}
    for klass in reversed(cls.__mro__):
        methods.update(
            (name, value)
            for name, value in vars(klass).items()
            if not name.startswith("_") and inspect.isfunction(value)
        )
    return methods


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
    base = cls.__mro__[-3]  # the hand-written base (then SessionView, object)
    assert base.__name__.endswith("SessionBase")
    for name, method in methods.items():
        if name in vars(base) or name == "async_session":
            continue
        doc = inspect.getdoc(method)
        assert doc is not None, name
        link = f"[`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]"
        assert f"{note} of {link}" in " ".join(doc.split()), name
        assert doc.splitlines()[0] == inspect.getdoc(session_methods[name]).splitlines()[0]  # type: ignore[union-attr]
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        if params:
            assert "Args:" in doc, name
        for param in params:
            assert f"    {param}:" in doc or f"    *{param}:" in doc, (name, param)
        if inspect.iscoroutinefunction(session_methods[name]):
            assert inspect.iscoroutinefunction(method) is awaitable, name
    assert "blocks the calling thread" in " ".join(
        (inspect.getdoc(BlockingSession.list_tools) or "").split()
    )
    assert "returns an asyncio awaitable" in " ".join(
        (inspect.getdoc(AsyncioSession.list_tools) or "").split()
    )


def test_check_mode_fails_on_a_stale_file_and_a_run_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "trio_mcp"
    package.mkdir()
    for path in (ROOT / "trio_mcp").glob("*.py"):
        (package / path.name).write_text(path.read_text())
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "PACKAGE", package)
    assert gen.main(["--check"]) == 0

    # ClientSession grew, no regeneration
    (package / "_session.py").write_text(with_new_methods()["_session.py"])
    assert gen.main(["--check"]) == 1
    assert "stale: trio_mcp/_blocking_api.py, trio_mcp/_asyncio_api.py" in capsys.readouterr().out
    assert (
        "def frobnicate" not in (package / "_blocking_api.py").read_text()
    )  # --check writes nothing

    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert "def frobnicate(" in (package / "_blocking_api.py").read_text()
    assert "async def frobnicate(" in (package / "_asyncio_api.py").read_text()
    capsys.readouterr()

    # a mixin grew: --check covers the mixins' bridge modules too
    (package / "_session_tools.py").write_text(
        with_new_methods_in_a_mixin()["_session_tools.py"].replace("frob", "twiddle")
    )
    assert gen.main(["--check"]) == 1
    assert (
        "stale: trio_mcp/_blocking_api_tools.py, trio_mcp/_asyncio_api_tools.py"
        in capsys.readouterr().out
    )
    assert gen.main([]) == 0
    assert "def twiddlenicate(" in (package / "_blocking_api_tools.py").read_text()
    assert "async def twiddlenicate(" in (package / "_asyncio_api_tools.py").read_text()

    # a generated module whose mixin has gone is stale, and a run removes it
    (package / "_blocking_api_gone.py").write_text("# Generated by scripts/gen_bridges.py\n")
    assert gen.main(["--check"]) == 1
    assert "stale: trio_mcp/_blocking_api_gone.py" in capsys.readouterr().out
    assert gen.main([]) == 0
    assert "removed trio_mcp/_blocking_api_gone.py" in capsys.readouterr().out
    assert not (package / "_blocking_api_gone.py").exists()
    assert gen.main(["--check"]) == 0

    # a hand-written module with a bridge's prefix is not the generator's to remove
    (package / "_blocking_api_helpers.py").write_text('"""Hand-written."""\n')
    assert gen.main(["--check"]) == 0
    assert gen.main([]) == 0
    assert (package / "_blocking_api_helpers.py").exists()


NEW_MIXIN = '''"""A new area of the session API."""

from __future__ import annotations

from . import types as t
from ._requests import RequestPath


class GadgetsAPI(RequestPath):
    """Gadgets."""

    __slots__ = ()

    async def list_gadgets(self, *, timeout: float | None = None) -> list[t.Tool]:
        """List the gadgets.

        Args:
            timeout: Seconds before `trio.TooSlowError`.
        """
        raise NotImplementedError
'''


def test_a_new_mixin_gets_its_own_bridge_modules() -> None:
    session = (ROOT / "trio_mcp" / "_session.py").read_text()
    bases = "class ClientSession(ToolsAPI, FeaturesAPI, NotificationsAPI, metaclass"
    assert session.count(bases) == 1
    session = session.replace(
        bases, bases.replace("NotificationsAPI,", "NotificationsAPI, GadgetsAPI,")
    )
    session = session.replace(
        "from ._session_tools import ToolsAPI\n",
        "from ._session_gadgets import GadgetsAPI\nfrom ._session_tools import ToolsAPI\n",
    )
    sources = {"_session.py": session, "_session_gadgets.py": NEW_MIXIN}
    for bridge in gen.BRIDGES:
        texts = gen.render(bridge, sources)
        gadgets = texts[f"{bridge.module}_gadgets.py"]
        compile(gadgets, "gadgets.py", "exec")
        assert f"class {bridge.prefix}GadgetsAPI({bridge.base}):" in gadgets
        assert "def list_gadgets(" in gadgets
        assert (
            f"{bridge.prefix}NotificationsAPI, {bridge.prefix}GadgetsAPI"
            in texts[f"{bridge.module}.py"]
        )


def test_a_callable_parameter_no_rule_covers_stops_the_generator() -> None:
    """A new kind of callback would silently reach the session unwrapped: refuse instead."""
    for sources in (with_new_methods(), with_new_methods_in_a_mixin()):
        ((name, source),) = sources.items()
        source = source.replace(
            "self, target: str, *, level: int = 1,",
            "self, target: str, *, on_frob: FrobCallback | None = None, level: int = 1,",
        )
        with pytest.raises(SystemExit, match=r"frobnicate\(on_frob: FrobCallback \| None\).*CALL"):
            gen.render(gen.BLOCKING, {name: source})


def test_a_trio_object_yielded_without_a_wrapper_stops_the_generator() -> None:
    for sources in (with_new_methods(), with_new_methods_in_a_mixin()):
        ((name, source),) = sources.items()
        source = source.replace(
            'AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:\n        """Receive frobs',
            'AsyncGenerator[trio.MemoryReceiveChannel[str], None]:\n        """Receive frobs',
        )
        with pytest.raises(SystemExit, match=r"yields trio\.MemoryReceiveChannel\[str\].*YIELDS"):
            gen.render(gen.ASYNCIO, {name: source})

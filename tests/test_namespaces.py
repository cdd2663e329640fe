"""The feature namespaces (trio_mcp.auth, trio_mcp.agent, ...) and the old top-level spellings.

Names that moved from ``trio_mcp`` to a namespace still work as ``trio_mcp.X`` for one
release: each access warns with a DeprecationWarning naming the new place, and gives the
very same object (an ``except trio_mcp.TokenRequestError`` still catches).
"""

from __future__ import annotations

import importlib
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import msgspec
import pytest

import trio_mcp

MOVED_TO_NAMESPACES = sorted(
    (name, namespace) for name, namespace in trio_mcp._MOVED.items() if namespace != "types"
)


def test_moved_names_are_many_and_each_lives_in_its_namespace() -> None:
    # 89 names left the top level; the protocol types are checked in test_types_namespace
    assert len([n for n in trio_mcp._MOVED if trio_mcp._MOVED[n] != "types"]) == 80
    for name, namespace in MOVED_TO_NAMESPACES:
        module = importlib.import_module(f"trio_mcp.{namespace}")
        assert name in module.__all__, (name, namespace)
        assert name not in trio_mcp.__all__


@pytest.mark.parametrize(("name", "namespace"), MOVED_TO_NAMESPACES)
def test_old_spelling_warns_and_is_the_same_object(name: str, namespace: str) -> None:
    module = importlib.import_module(f"trio_mcp.{namespace}")
    with pytest.warns(DeprecationWarning, match=rf"trio_mcp\.{namespace}\.{name}\b") as record:
        value = getattr(trio_mcp, name)
    assert len(record) == 1
    assert value is getattr(module, name)


def test_old_spelling_warns_on_every_access() -> None:
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match=r"trio_mcp\.auth\.FileTokenStore"):
            trio_mcp.FileTokenStore  # noqa: B018


def test_old_spelling_in_from_import_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"trio_mcp\.groups\.RestartPolicy"):
        from trio_mcp import RestartPolicy
    assert RestartPolicy is trio_mcp.groups.RestartPolicy


def test_old_exception_spelling_still_catches() -> None:
    with pytest.warns(DeprecationWarning, match=r"trio_mcp\.auth\.TokenRequestError"):
        old = trio_mcp.TokenRequestError
    with pytest.raises(old):
        raise trio_mcp.auth.TokenRequestError("refused", error="invalid_grant")
    with pytest.warns(DeprecationWarning, match="TokenRequestError"), pytest.raises(old):
        raise trio_mcp.TokenRequestError("refused", error="invalid_grant")


def test_moved_names_are_not_in_dir_or_all() -> None:
    listed = set(dir(trio_mcp))
    for name, _ in MOVED_TO_NAMESPACES:
        assert name not in listed
        assert name not in trio_mcp.__all__
    assert set(trio_mcp.__all__) <= listed
    assert {"auth", "agent", "config", "types"} <= listed


def test_kept_names_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in trio_mcp.__all__:
            getattr(trio_mcp, name)
        assert trio_mcp.OAuth is trio_mcp.auth.OAuth
        assert trio_mcp.AuthError is trio_mcp.auth.AuthError
        assert trio_mcp.StreamableHTTPParameters is trio_mcp.transports.StreamableHTTPParameters
        assert trio_mcp.load_config is trio_mcp.config.load_config


def test_names_show_their_namespace() -> None:
    assert trio_mcp.OAuth.__module__ == "trio_mcp.auth"
    assert trio_mcp.auth.TokenRequestError.__module__ == "trio_mcp.auth"
    assert trio_mcp.StreamableHTTPParameters.__module__ == "trio_mcp.transports"
    assert trio_mcp.StdioParameters.__module__ == "trio_mcp.transports"
    assert trio_mcp.groups.ServerState.__module__ == "trio_mcp.groups"
    assert trio_mcp.groups.ServerFailure.__module__ == "trio_mcp.groups"
    assert trio_mcp.testing.CassetteError.__module__ == "trio_mcp.testing"
    assert trio_mcp.MCPError.__module__ == "trio_mcp"
    assert trio_mcp.ClientSession.__module__ == "trio_mcp"


def test_exceptions_pickle_under_their_public_name() -> None:
    error = trio_mcp.auth.LoginRequiredError("a login is needed")
    assert pickle.dumps(error).count(b"trio_mcp.auth") == 1
    assert type(pickle.loads(pickle.dumps(error))) is trio_mcp.auth.LoginRequiredError


async def test_published_structs_still_decode() -> None:
    # msgspec resolves a Struct's annotations in the module named by __module__: the
    # namespaces resolve them first, so the Structs that moved still decode and convert.
    skill = msgspec.convert(
        {"uri": "skill://pdf/SKILL.md", "resources": [{"uri": "skill://pdf/a.md", "size": 3}]},
        trio_mcp.skills.Skill,
    )
    assert skill.resources == [trio_mcp.skills.SkillFile(uri="skill://pdf/a.md", size=3)]
    assert trio_mcp.skills.Skill.__module__ == "trio_mcp.skills"
    note = msgspec.json.decode(b'{"method": "m", "params": {}}', type=trio_mcp.Notification)
    assert note.method == "m"
    config = await trio_mcp.config.parse_config('{"mcpServers": {"a": {"command": "python"}}}')
    assert isinstance(config.servers["a"], trio_mcp.config.ServerConfig)
    assert msgspec.structs.fields(trio_mcp.config.MCPConfig)
    msgspec.json.Decoder(trio_mcp.groups.GroupNotification)


@pytest.mark.parametrize(
    "namespace",
    ["auth", "agent", "config", "groups", "handlers", "skills", "tasks", "transports", "urls"],
)
def test_each_namespace_imports_on_its_own(namespace: str) -> None:
    code = f"import trio_mcp.{namespace} as ns; print(len([getattr(ns, n) for n in ns.__all__]))"
    root = str(Path(trio_mcp.__file__).parent.parent)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": root, "PATH": ""},
    )
    assert int(out.stdout) == len(importlib.import_module(f"trio_mcp.{namespace}").__all__)


def test_classes_built_inside_trio_mcp_show_their_namespace_too() -> None:
    # A URL target builds StreamableHTTPParameters without the caller naming the class; in a
    # fresh interpreter the class loaded that way still shows trio_mcp.transports.
    code = (
        "from trio_mcp._connect import _resolve_target\n"
        "print(type(_resolve_target('https://example.com/mcp', {})).__module__)\n"
        "print(type(_resolve_target('wss://example.com/mcp', {})).__module__)\n"
        "import trio_mcp\n"
        "trio_mcp.open_asyncio_session\n"
        "from trio_mcp._asyncio_api import AsyncioSession\n"
        "print(AsyncioSession.__module__)\n"
    )
    root = str(Path(trio_mcp.__file__).parent.parent)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": root, "PATH": ""},
    )
    assert out.stdout.split() == ["trio_mcp.transports", "trio_mcp.transports", "trio_mcp"]


def test_no_old_spelling_left_in_code_docs_or_docstrings() -> None:
    # Running code would fail on the warning (filterwarnings = error); this also catches
    # docstrings, prose and examples that are never run.
    root = Path(trio_mcp.__file__).resolve().parent.parent
    # (the pages that show the old spelling on purpose, to document the deprecation)
    shims = {"tests/test_namespaces.py", "tests/test_types_namespace.py", "docs/reference.md"}
    pattern = re.compile(r"(?<![\w.])trio_mcp\.(\w+)\b")
    stale: list[str] = []
    for folder, suffixes in [
        ("trio_mcp", {".py"}),
        ("tests", {".py"}),
        ("docs", {".md"}),
        ("bench", {".py"}),
        ("scripts", {".py"}),
    ]:
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.suffix not in suffixes or relative in shims or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            stale += [
                f"{relative}: trio_mcp.{match.group(1)}"
                for match in pattern.finditer(text)
                if match.group(1) in trio_mcp._MOVED
            ]
    readme = (root / "README.md").read_text(encoding="utf-8")
    stale += [
        f"README.md: {m.group(0)}"
        for m in pattern.finditer(readme)
        if m.group(1) in trio_mcp._MOVED
    ]
    assert stale == []

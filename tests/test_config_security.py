"""Config files under attack: consent pins what runs, secrets stay hidden, hostile files
are cheap to reject, approvals survive concurrent processes, file I/O stays off the loop."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import ConfigError, load_config, open_server_group
from trio_mcp._config import MAX_DEPTH, strip_jsonc
from trio_mcp.config import (
    ConsentRequest,
    FileConsentStore,
    MemoryConsentStore,
    check_consent,
    parse_config,
)
from trio_mcp.groups import RestartPolicy

ROOT = Path(trio_mcp.__file__).parent

# -- consent pins what runs ----------------------------------------------------------------


async def test_editing_the_env_file_asks_again(tmp_path: Path) -> None:
    env_file = tmp_path / "server.env"
    config_path = tmp_path / "mcp.json"
    config_path.write_text(
        json.dumps({"mcpServers": {"s": {"command": "server", "envFile": str(env_file)}}})
    )
    store = MemoryConsentStore()
    asked: list[ConsentRequest] = []

    async def approve(request: ConsentRequest) -> bool:
        asked.append(request)
        return True

    env_file.write_text("PATH=/usr/bin\nTOKEN=a\n")
    first = await load_config(config_path)
    assert await check_consent(first, approve, store) == {"s": True}
    again = await load_config(config_path)
    assert await check_consent(again, approve, store) == {"s": True}
    assert len(asked) == 1  # unchanged: not asked again
    env_file.write_text("PATH=/tmp/evil\nTOKEN=a\n")  # the config file itself is unchanged
    evil = await load_config(config_path)
    assert evil.servers["s"].env["PATH"] == "/tmp/evil"
    assert evil.servers["s"].fingerprint != first.servers["s"].fingerprint
    assert await check_consent(evil, approve, store) == {"s": True}
    assert len(asked) == 2 and asked[1].changed
    assert "/tmp/evil" not in json.dumps(store.approved)  # only hashes are stored


async def test_the_request_shows_everything_the_fingerprint_pins(tmp_path: Path) -> None:
    """A cloned repository's entry can run its own code through env, envFile and cwd: the
    person asked sees all of it (values that change what runs in full, others masked), and
    on a change, which parts changed."""
    env_file = tmp_path / "server.env"
    env_file.write_text("NODE_OPTIONS=--require ./payload.js\nAPI_TOKEN=tok-1\n")
    entry = {
        "command": "node",
        "args": ["server.js"],
        "cwd": str(tmp_path / "repo"),
        "envFile": str(env_file),
        "env": {"LD_PRELOAD": "./evil.so", "PYTHONPATH": ".", "PASSWORD": "pw-1"},
    }
    remote = {"url": "https://alice:pw-2@mcp.example/mcp", "headers": {"X-Key": "k-1"}}
    config_path = tmp_path / "mcp.json"
    config_path.write_text(json.dumps({"mcpServers": {"s": entry, "r": remote}}))
    store = MemoryConsentStore()
    asked: list[ConsentRequest] = []

    async def approve(request: ConsentRequest) -> bool:
        asked.append(request)
        return True

    await check_consent(await load_config(config_path), approve, store)
    local, web = asked[0].details, asked[1].details
    assert local == {
        "type": "stdio",
        "command": "node server.js",
        "cwd": str(tmp_path / "repo"),
        "envFile": str(env_file),
        "env API_TOKEN": "***",
        "env LD_PRELOAD": "./evil.so",
        "env NODE_OPTIONS": "--require ./payload.js",
        "env PASSWORD": "***",
        "env PYTHONPATH": ".",
    }
    assert web == {"type": "http", "url": "https://mcp.example/mcp", "header X-Key": "***"}
    assert asked[0].changes == ()
    env_file.write_text("NODE_OPTIONS=--require ./other.js\nAPI_TOKEN=tok-1\n")
    await check_consent(await load_config(config_path), approve, store)
    assert len(asked) == 3 and asked[2].changed
    assert asked[2].changes == ("env NODE_OPTIONS",)
    stored = json.dumps(store.approved)
    for value in ("payload", "tok-1", "pw-1", "pw-2", "k-1", "evil.so"):
        assert value not in stored  # digests only


# -- interpolated secrets stay out of reprs, errors and logs -------------------------------

SECRET = "hunter2-s3cret-value"


async def test_interpolated_secrets_never_in_repr_errors_or_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there: connecting fails
    document = {
        "mcpServers": {
            "remote": {"url": f"http://127.0.0.1:{port}/mcp?key=${{env:SECRET}}"},
            "echoes": {
                "command": sys.executable,
                "args": [
                    "-c",
                    "import sys; print(sys.argv, file=sys.stderr); sys.exit(3)",
                    "--token=${env:SECRET}",
                ],
            },
            "missing": {"command": "/nonexistent/${env:SECRET}/server"},
            "prompted": {"url": "https://example.com/mcp/${SECRET}"},
        }
    }
    config = await parse_config(json.dumps(document), environ={"SECRET": SECRET})
    for server in config.servers.values():
        assert SECRET not in repr(server)
    assert "${env:SECRET}" in repr(config.servers["remote"])
    assert "${env:SECRET}" in repr(config.servers["echoes"])
    assert config.servers["remote"].url is not None and SECRET in config.servers["remote"].url
    servers = {name: config.servers[name] for name in ("remote", "echoes", "missing")}
    with trio.fail_after(60):
        async with open_server_group(servers, restart=RestartPolicy(enabled=False)) as group:
            statuses = group.statuses()
    for name, status in statuses.items():
        assert status.error is not None, name
        chain: list[BaseException] = []
        error: BaseException | None = status.error
        while error is not None and len(chain) < 10:
            chain.append(error)
            error = error.__cause__ or error.__context__
        for link in chain:
            assert SECRET not in str(link) and SECRET not in repr(link), (name, link)
            assert SECRET not in str(getattr(link, "filename", "")), (name, link)
        assert SECRET not in status.stderr_tail
        assert SECRET not in repr(status)
    assert "${env:SECRET}" in str(statuses["remote"].error)
    assert "${env:SECRET}" in statuses["echoes"].stderr_tail
    assert any(r.levelno >= logging.WARNING for r in caplog.records)
    assert SECRET not in caplog.text
    for record in caplog.records:
        assert SECRET not in record.getMessage()


def test_every_trio_mcp_logger_hides_interpolated_secrets() -> None:
    from trio_mcp._config import _LOGGERS  # pyright: ignore[reportPrivateUsage]

    used: set[str] = set()
    for path in ROOT.rglob("*.py"):
        used.update(re.findall(r'getLogger\("(trio_mcp[a-z_.]*)"\)', path.read_text()))
    assert used <= set(_LOGGERS), used - set(_LOGGERS)
    for name in _LOGGERS:
        assert logging.getLogger(name).filters, name


async def test_short_and_path_values_are_not_redacted() -> None:
    config = await parse_config(
        '{"mcpServers": {"a": {"command": "${userHome}/x", "args": ["${N}", "${env:LONG}"]}}}',
        environ={"N": "1", "LONG": "long-value"},
    )
    server = config.servers["a"]
    assert server.args == ("1", "long-value")
    assert server.redact("1 long-value") == "1 ${env:LONG}"
    assert "${userHome}" not in repr(server)  # a path, not a secret


# -- hostile files: linear time, bounded depth ---------------------------------------------

MIB = 1 << 20

HOSTILE = [
    b'{"mcpServers": {}} "' + b'\\"' * (MIB // 2),  # the old regex: hours (quadratic)
    b'{"mcpServers": {}} ' + b'"\\"' * (MIB // 3),
    b'{"mcpServers": {}, "k": [' + b"1," * (MIB // 2) + b"]}",
    b'{"mcpServers": {}} ' + b"/*" * (MIB // 2),
    b'{"mcpServers": {}} ' + b"// " * (MIB // 3),
    b'{"mcpServers": {}} ' + b"," * MIB,
    b'{"mcpServers": {}} /*' + b" " * MIB,
]


@pytest.mark.parametrize("document", HOSTILE, ids=range(len(HOSTILE)))
async def test_a_hostile_mebibyte_is_handled_in_linear_time(document: bytes) -> None:
    # 1 MiB: the old stripper took hours on the first of these; the test timeout is 300 s
    try:
        config = await parse_config(document, source="f")
    except ConfigError:
        return  # rejected, as a ConfigError: fine
    assert config.servers == {}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 100_000])
async def test_deep_nesting_is_a_config_error(depth: int) -> None:
    text = '{"mcpServers": {"a": {"command": "x", "env": {"K": ' + "[" * depth + "]" * depth
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH}") as info:
        await parse_config(text + "}}}}", source="f")
    assert info.value.line == 1
    nested = "[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3)
    ok = await parse_config('{"mcpServers": {"a": {"command": "x"}}, "k": ' + nested + "}")
    assert list(ok.servers) == ["a"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('ab/*,"\\\n ]}')),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet="ab/*,", max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(value=_JSON, indent=st.sampled_from([None, 1]))
def test_strip_jsonc_leaves_plain_json_alone(value: Any, indent: int | None) -> None:
    data = json.dumps(value, indent=indent).encode()
    assert strip_jsonc(data) == data


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(data=st.binary(max_size=200) | st.text(alphabet='"\\/*,\n []{}a', max_size=200))
def test_strip_jsonc_keeps_offsets_or_raises_value_error(data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    try:
        stripped = strip_jsonc(raw)
    except ValueError:
        return
    assert len(stripped) == len(raw)
    assert [i for i, b in enumerate(stripped) if b == 10] == [
        i for i, b in enumerate(raw) if b == 10
    ]


# -- concurrent approvals --------------------------------------------------------------------

_WRITER = """
import sys
from trio_mcp.config import FileConsentStore
store = FileConsentStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    store.set(f"{sys.argv[2]}-{i}", "f" * 64)
"""


async def test_two_processes_approving_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "consent.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    count = 150
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for who in ("a", "b"):
                command = [sys.executable, "-c", _WRITER, str(path), who, str(count)]
                nursery.start_soon(partial(trio.run_process, command, env=env))
    approved = json.loads(path.read_bytes())
    assert len(approved) == 2 * count
    left = {p.name for p in await trio.Path(tmp_path).iterdir()}
    assert left == {"consent.json", "consent.json.lock"}  # no temporary file left behind


# -- file I/O off the event loop -------------------------------------------------------------


class _ThreadRecordingStore(MemoryConsentStore):
    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def get(self, key: str) -> str | None:
        self.threads.append(threading.current_thread())
        return super().get(key)

    def set(self, key: str, fingerprint: str) -> None:
        self.threads.append(threading.current_thread())
        super().set(key, fingerprint)


async def test_consent_store_and_env_file_io_run_in_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trio_mcp._config._loading as config_module

    env_file = tmp_path / "x.env"
    env_file.write_text("A=1\n")
    readers: list[threading.Thread] = []
    original = config_module.read_env_file

    def recording(*args: Any) -> dict[str, str]:
        readers.append(threading.current_thread())
        return original(*args)

    monkeypatch.setattr(config_module, "read_env_file", recording)
    text = json.dumps({"mcpServers": {"s": {"command": "x", "envFile": str(env_file)}}})
    config = await parse_config(text)
    assert readers and threading.main_thread() not in readers
    store = _ThreadRecordingStore()

    async def approve(request: ConsentRequest) -> bool:
        del request
        return True

    assert await check_consent(config, approve, store) == {"s": True}
    assert len(store.threads) == 3  # get; set the part digests, then the fingerprint
    assert threading.main_thread() not in store.threads
    file_store = FileConsentStore(tmp_path / "c.json")
    assert await check_consent(config, approve, file_store) == {"s": True}
    assert file_store.get(next(iter(json.loads((tmp_path / "c.json").read_bytes())))) is not None


def test_a_corrupt_consent_file_is_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "consent.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    store = FileConsentStore(path)
    assert store.get("k") is None
    store.set("k", "f")
    assert store.get("k") == "f"


_JSONISH = st.text(alphabet=st.sampled_from('{}[]",:/*\\\n ab1$-') | st.characters(), max_size=300)


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(
    text=_JSONISH
    | st.builds(
        lambda servers, junk: '{"mcpServers": ' + servers + junk,
        st.sampled_from(['{"a": {"command": "x"}}', '{"a": {"url": "${A}"}}', "{", "[", "{}"]),
        _JSONISH,
    )
)
def test_any_document_parses_or_raises_config_error(text: str) -> None:
    async def parse() -> None:
        try:
            await parse_config(text, source="f", environ={"A": "https://x"})
        except ConfigError:
            pass

    trio.run(parse)

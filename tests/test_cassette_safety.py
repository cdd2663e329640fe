"""Cassettes keep no secrets, load or fail with one clear error, and replay in linear time."""

from __future__ import annotations

import json
import re
import string
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp.testing import (
    REDACTED,
    Recorder,
    ReplayServer,
    is_secret_name,
    load_cassette,
    scrub,
)
from trio_mcp.testing._replay import _matches

DEMO = [sys.executable, "-m", "trio_mcp.testing"]


@asynccontextmanager
async def session_to(target: Any, **options: Any) -> AsyncGenerator[trio_mcp.ClientSession, None]:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, target, **options) as session:
            yield session
        nursery.cancel_scope.cancel()


# -- secrets ------------------------------------------------------------------------------------


async def test_recorded_servers_env_values_never_reach_the_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    env = {
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG",
        "DATABASE_URL": "postgres://admin:hunter2-db-pw@db.internal:5432/app",
        "PGPASSWORD": "pg-pass-9876",
        "LOG_LEVEL": "debug-visible",
    }
    recorder = Recorder(DEMO, cassette, env=env, scrub_env=False)
    with trio.fail_after(30):
        async with session_to(recorder) as session:
            # the server echoes what it knows (as a buggy server might print its config)
            for value in env.values():
                await session.call_tool("echo", {"text": f"config: {value}"})
    text = cassette.read_text()
    for secret in ("wJalrXUtnFEMI-K7MDENG", "hunter2-db-pw", "admin:", "pg-pass-9876"):
        assert secret not in text, secret
    header, events = load_cassette(cassette)
    assert sorted(header["target"]["env"]) == sorted(env)  # names only
    assert "debug-visible" not in json.dumps(header)  # no value at all in the header
    assert "debug-visible" in text  # ...but a harmless value the server echoed stays
    assert "postgres://[REDACTED]@db.internal:5432/app" in text


def test_one_rule_for_secret_names() -> None:
    secret = [
        "token",
        "access_token",
        "apiKey",
        "X-Api-Key",
        "Authorization",
        "Cookie",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "PGPASSWORD",
        "--client-secret",
        "db.password",
        "private_key",
    ]
    plain = ["progressToken", "maxTokens", "nextCursor", "tokenEndpoint", "PWD", "PATH", "url"]
    assert [n for n in secret if not is_secret_name(n)] == []
    assert [n for n in plain if is_secret_name(n)] == []


def test_scrub_urls_pairs_bearers_and_keys_everywhere() -> None:
    value = {
        "url": "https://user:pa55word@example.com/mcp",
        "token_only": "see https://ghp_abcdef@github.com/x.git",
        "text": "Authorization: Bearer abcdefghijkl; GET /x?api_key=zzz123&page=2",
        "json": '{"password": "hunter2", "name": "ada"}',
        "nested": [{"clientSecret": 12345}, {"progressToken": "p-1"}],
    }
    assert scrub(value) == {
        "url": f"https://{REDACTED}@example.com/mcp",
        "token_only": f"see https://{REDACTED}@github.com/x.git",
        "text": f"Authorization: {REDACTED} {REDACTED}; GET /x?api_key={REDACTED}&page=2",
        "json": f'{{"password": "{REDACTED}", "name": "ada"}}',
        "nested": [{"clientSecret": REDACTED}, {"progressToken": "p-1"}],
    }


def test_a_secret_flags_value_is_scrubbed_from_the_argv(tmp_path: Path) -> None:
    recorder = Recorder(
        ["server", "--token", "tok-123456", "--db=postgres://u:pw-123456@h/x", "--name", "ok"],
        tmp_path / "c.jsonl",
    )
    recorder._write([])
    header, _ = load_cassette(recorder.path)
    assert header["target"]["command"] == [
        "server",
        "--token",
        REDACTED,
        f"--db=postgres://{REDACTED}@h/x",
        "--name",
        "ok",
    ]


_USERINFO_CHARS = st.text(
    alphabet=string.ascii_letters + string.digits + "-._~!$&'()*+,;=:%", max_size=40
)


@settings(deadline=None)
@given(user=_USERINFO_CHARS, password=_USERINFO_CHARS, around=st.text(max_size=100))
def test_scrubbing_any_text_keeps_no_userinfo(user: str, password: str, around: str) -> None:
    out = scrub(f"{around} https://{user}:{password}s3cret@host/ {around}")
    assert "s3cret" not in out.replace(around, "")


# -- loading: one documented error naming the file and line -------------------------------------

HEADER = json.dumps({"cassette": "trio_mcp", "version": 1, "target": "t"})
GOOD = json.dumps({"t": 0, "from": "client", "message": {"jsonrpc": "2.0", "method": "x"}})


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"t": 0, "from": "client", "message": {"jsonrpc": "2.0", "met', "not a JSON line"),
        ("[1, 2]", "expected a JSON object"),
        ('{"from": "client", "message": {}}', "'t' must be a number"),
        ('{"t": "soon", "from": "client", "message": {}}', "'t' must be a number"),
        ('{"t": -1, "from": "client", "message": {}}', "'t' must be a finite number"),
        ('{"t": 0, "from": "nobody", "message": {}}', "'from' must be"),
        ('{"t": 0, "from": "client"}', "needs a 'message'"),
        ('{"t": 0, "from": "server", "raw": 5}', "needs a 'message'"),
        ('{"t": 0, "from": "client", "end": true}', "'end' must be true, on a server line"),
        ('{"t": 0, "from": "server", "end": true, "exit_code": "1"}', "'exit_code'"),
        ('{"t": 0, "from": "server", "end": true, "stderr_tail": 3}', "'stderr_tail'"),
    ],
)
def test_a_tampered_line_is_named(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "tampered.jsonl"
    path.write_text(f"{HEADER}\n\n{GOOD}\n{line}\n{GOOD}\n")  # the bad line is line 4
    for load in (load_cassette, ReplayServer):
        with pytest.raises(trio_mcp.testing.CassetteError) as caught:
            load(path)
        assert caught.value.line == 4 and caught.value.path == str(path)
        assert problem in caught.value.problem
        assert str(caught.value).startswith(f"{path}, line 4: ")
        assert isinstance(caught.value, ValueError)  # as before: a ValueError


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        (b"", None, "empty cassette"),
        (b"\n\n", None, "empty cassette"),
        (b'{"t": 0}\n', 1, "not a trio_mcp cassette"),
        (b'{"cassette": "trio_mcp", "version": 7}\n', 1, "unsupported cassette version"),
        (HEADER.encode() + b'\n{"t": 0, "from": "client", "message": "\xff"}\n', 2, "UTF-8"),
        (HEADER.encode()[:20], 1, "not a JSON line"),  # truncated header
    ],
)
def test_a_broken_file_is_named(
    tmp_path: Path, content: bytes, line: int | None, problem: str
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(content)
    with pytest.raises(trio_mcp.testing.CassetteError) as caught:
        load_cassette(path)
    assert caught.value.line == line
    assert problem in str(caught.value)


async def test_replay_names_the_real_line_despite_blank_lines(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}}
    answer = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "rec", "version": "1"},
    }
    events = [
        {
            "t": 0,
            "from": "client",
            "message": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        },
        {"t": 0, "from": "server", "message": {"jsonrpc": "2.0", "id": 0, "result": answer}},
        {
            "t": 0,
            "from": "client",
            "message": {"jsonrpc": "2.0", "method": "notifications/initialized"},
        },
        {"t": 1, "from": "client", "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text(HEADER + "\n\n\n" + "\n\n".join(json.dumps(e) for e in events) + "\n")
    replay = ReplayServer(path)
    async with session_to(replay, protocol="legacy") as session:
        with pytest.raises(trio_mcp.ServerError, match=r"c\.jsonl, line 10"):
            await session.list_prompts()


# -- [REDACTED] matching: linear, and right -----------------------------------------------------


def test_many_placeholders_match_in_linear_time() -> None:
    k = 200
    expected = (REDACTED + "a") * k + "b"
    assert not _matches(expected, "a" * (3 * k))  # the regex version backtracks for ages
    assert _matches(expected, "xa" * k + "b")
    assert not _matches(expected, "xa" * (k - 1) + "b")
    big = REDACTED.join(["ab"] * k)
    assert _matches(big, "ab" * k)
    assert not _matches(big, "ab" * (k - 1) + "a" + "c" * 50_000)


def test_placeholder_matching_cases() -> None:
    assert _matches(REDACTED, 5) and _matches(REDACTED, {"any": "thing"})
    assert _matches(f"Bearer {REDACTED}", "Bearer xyz")
    assert not _matches(f"Bearer {REDACTED}", 5)  # a partial placeholder needs a string
    assert not _matches(f"Bearer {REDACTED}", "Basic xyz")
    assert _matches(f"{REDACTED}-{REDACTED}", "-")
    assert not _matches(f"ab{REDACTED}ba", "aba")  # prefix and suffix may not overlap
    assert _matches(f"a{REDACTED}b{REDACTED}c", "a__b__b__c")


_ALPHABET = st.text(alphabet="ab", max_size=6)


@settings(deadline=None)
@given(parts=st.lists(_ALPHABET, min_size=2, max_size=5), text=st.text(alphabet="ab", max_size=14))
def test_placeholder_matching_agrees_with_the_regular_expression(
    parts: list[str], text: str
) -> None:
    pattern = ".*".join(re.escape(part) for part in parts)
    expected = re.fullmatch(pattern, text, re.DOTALL) is not None
    assert _matches(REDACTED.join(parts), text) == expected


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "t": st.one_of(st.floats(), st.integers(), st.text(max_size=3)),
        "from": st.sampled_from(["client", "server", "nobody", 1]),
        "message": _JSON,
        "raw": _JSON,
        "end": _JSON,
        "exit_code": _JSON,
        "stderr_tail": _JSON,
    },
)


@settings(deadline=None)
@given(
    events=st.lists(st.one_of(_EVENT, _JSON), max_size=5),
    cut=st.integers(min_value=0, max_value=2000),
)
def test_any_file_loads_or_raises_cassette_error(
    tmp_path_factory: pytest.TempPathFactory, events: list[Any], cut: int
) -> None:
    text = "\n".join([HEADER, *(json.dumps(e) for e in events)])
    path = tmp_path_factory.mktemp("c") / "c.jsonl"
    for content in (text, text[:cut]):  # whole, and truncated anywhere
        path.write_text(content)
        failure: trio_mcp.testing.CassetteError | None = None
        try:
            ReplayServer(path)
        except (
            trio_mcp.testing.CassetteError
        ) as exc:  # nothing else (no KeyError, AttributeError...)
            failure = exc
        assert failure is None or failure.path == str(path)

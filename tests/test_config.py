"""Config files of each dialect, written the way their tools document them."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
import trio

from trio_mcp import (
    ConfigError,
    StdioParameters,
    StreamableHTTPParameters,
    WebSocketParameters,
    load_config,
    open_mcp_session,
)
from trio_mcp._config import strip_jsonc
from trio_mcp.config import (
    ConfigInput,
    FileConsentStore,
    MemoryConsentStore,
    check_consent,
    parse_config,
)

CONFIGS = Path(__file__).parent / "configs"


async def test_claude_desktop() -> None:
    config = await load_config(CONFIGS / "claude_desktop_config.json", environ={})
    assert config.dialect == "mcpServers"
    assert list(config.servers) == ["filesystem", "github"]
    fs = config.servers["filesystem"]
    assert fs.transport == "stdio"
    assert fs.command == "npx"
    assert fs.args[1] == "@modelcontextprotocol/server-filesystem"
    github = config.servers["github"]
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"}
    assert "<YOUR_TOKEN>" not in repr(github)  # secrets never shown
    target, options = github.target()  # a parameters object: nothing deprecated to pass on
    assert target == StdioParameters(
        ["npx", "-y", "@modelcontextprotocol/server-github"],
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"},
    )
    assert options == {}


async def test_cursor_env_prefix_and_remote() -> None:
    environ = {"API_KEY": "k-123", "MY_SERVICE_TOKEN": "tok"}
    config = await load_config(CONFIGS / "cursor_mcp.json", environ=environ)
    assert config.servers["server-name"].env == {"API_KEY": "k-123"}
    remote = config.servers["remote"]
    assert remote.transport == "http"
    assert remote.headers == {"Authorization": "Bearer tok"}
    target, options = remote.target()
    assert isinstance(target, StreamableHTTPParameters)
    assert (target.url, target.headers, options) == (
        "https://api.example.com/mcp",
        {"Authorization": "Bearer tok"},
        {},
    )
    empty = await load_config(CONFIGS / "cursor_mcp.json", environ={})
    assert empty.servers["server-name"].env == {"API_KEY": ""}  # ${env:X} unset: empty


async def test_an_entry_opens_with_no_deprecation_warning(tmp_path: Path) -> None:
    # target() used to give (argv, {"env": ..., "cwd": ...}): passed on to open_mcp_session,
    # those are the transport options it deprecates (a warning: an error under pytest)
    document = {
        "mcpServers": {
            "demo": {
                "command": sys.executable,
                "args": ["-m", "trio_mcp.testing"],
                "env": {"TRIO_MCP_CONFIG_TEST": "1"},
                "cwd": str(tmp_path),
            },
            "ws": {"url": "wss://example.com/mcp", "headers": {"X-Key": "k"}},
        }
    }
    config = await parse_config(json.dumps(document))
    target, options = config.servers["demo"].target()
    assert target == StdioParameters(
        [sys.executable, "-m", "trio_mcp.testing"],
        env={"TRIO_MCP_CONFIG_TEST": "1"},
        cwd=str(tmp_path),
    )
    assert config.servers["ws"].target() == (
        WebSocketParameters("wss://example.com/mcp", headers={"X-Key": "k"}),
        {},
    )
    with trio.fail_after(30):
        async with open_mcp_session(target, **options) as session:
            assert [tool.name for tool in await session.list_tools()]


async def test_claude_code_defaults_types_and_disabled() -> None:
    environ = {"API_KEY": "secret", "HOME": "/home/u"}
    config = await load_config(CONFIGS / "claude_code.mcp.json", environ=environ)
    api = config.servers["api-server"]
    assert api.url == "https://api.example.com/mcp"
    assert config.servers["legacy-sse"].transport == "sse"
    assert config.servers["local"].env == {"CACHE_DIR": "/home/u/.cache"}
    assert config.disabled == ("off",)
    with pytest.raises(ConfigError) as info:
        await load_config(CONFIGS / "claude_code.mcp.json", environ={"HOME": "/h"})
    error = info.value
    assert error.key_path == "mcpServers.api-server.headers.Authorization"
    assert "API_KEY is not set" in str(error)
    assert str(CONFIGS / "claude_code.mcp.json") in str(error)


async def test_vscode_inputs_comments_trailing_commas(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    asked: list[ConfigInput] = []

    async def answer(spec: ConfigInput) -> str:
        asked.append(spec)
        return "pplx-SECRET"

    path = CONFIGS / "vscode" / ".vscode" / "mcp.json"
    config = await load_config(path, inputs=answer)
    assert config.dialect == "vscode"
    assert [spec.id for spec in asked] == ["perplexity-key"]
    assert asked[0].password is True
    assert config.servers["Perplexity"].env == {"PERPLEXITY_API_KEY": "pplx-SECRET"}
    workspace = str((CONFIGS / "vscode").resolve())
    assert config.servers["fetch"].args == ("mcp-server-fetch", f"{workspace}/docs")
    assert config.servers["github"].url == "https://api.githubcopilot.com/mcp/"
    assert "pplx-SECRET" not in repr(config)
    assert "pplx-SECRET" not in caplog.text
    with pytest.raises(
        ConfigError, match=r"servers\.Perplexity\.env\.PERPLEXITY_API_KEY: .*inputs="
    ):
        await load_config(path)


async def test_vscode_settings_json_mcp_section() -> None:
    text = '{"editor.fontSize": 14, "mcp": {"servers": {"s": {"command": "srv"}}}}'
    config = await parse_config(text, source="settings.json")
    assert config.dialect == "vscode"
    assert config.servers["s"].command == "srv"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}',
            "f: mcpServers.a.args[1]: expected `str`, got `int`",
        ),
        (
            '{"mcpServers": {"a": {"args": []}}}',
            "f: mcpServers.a: the entry has neither 'command' nor 'url'",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "env": {"K": ["v"]}}}}',
            "f: mcpServers.a.env.K: expected a string, got list",
        ),
        (
            '{"mcpServers": {"a b": {"type": "grpc", "url": "u"}}}',
            "f: mcpServers['a b'].type: unknown type 'grpc'",
        ),
        (
            '{"servers": {"a": {"command": "${input:nope}"}}}',
            "f: servers.a.command: ${input:nope} names no entry",
        ),
        (
            '{"mcpServers": {"a": {"command": "${weird:thing}"}}}',
            "f: mcpServers.a.command: unknown variable",
        ),
        ('{"mcpServers": {"a": {"command": "x",\n  "args": [1 2]}}}', "f:2:14: JSON is malformed"),
        ('{"mcpServers": {} /* never closed', "f:1:19: unterminated /* comment"),
        ('{"other": 1}', "f: no servers"),
        ("[1]", "f: expected `object`, got `array`"),
    ],
)
async def test_errors_name_file_key_path_and_problem(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        await parse_config(text, source="f", environ={})
    assert str(info.value).startswith(message)


async def test_missing_file() -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: cannot read the file"):
        await load_config("nope.json")


def test_strip_jsonc_keeps_strings_and_offsets() -> None:
    source = b'{"u": "http://x/*y*/", // c\n "a": [1, 2,], /* b\n */ "s": "\\" // no",}'
    stripped = strip_jsonc(source)
    assert len(stripped) == len(source)
    assert stripped.count(b"\n") == source.count(b"\n")
    import json

    assert json.loads(stripped) == {"u": "http://x/*y*/", "a": [1, 2], "s": '" // no'}


async def test_consent_pinning(tmp_path: Path) -> None:
    first = await parse_config(
        '{"mcpServers": {"a": {"command": "x", "env": {"T": "${T}"}}}}',
        source=str(tmp_path / "c.json"),
        environ={"T": "1"},
    )
    rotated = await parse_config(
        '{"mcpServers": {"a": {"command": "x", "env": {"T": "${T}"}}}}',
        source=str(tmp_path / "c.json"),
        environ={"T": "2"},
    )
    changed = await parse_config(
        '{"mcpServers": {"a": {"command": "evil", "env": {"T": "${T}"}}}}',
        source=str(tmp_path / "c.json"),
        environ={"T": "1"},
    )
    store = FileConsentStore(tmp_path / "cfg" / "consent.json")
    calls: list[bool] = []

    async def approve(request: object) -> bool:
        calls.append(request.changed)
        return True

    assert await check_consent(first, approve, store) == {"a": True}
    assert await check_consent(rotated, approve, store) == {
        "a": True
    }  # secret value rotated: same entry
    assert calls == [False]
    assert await check_consent(changed, approve, store) == {"a": True}
    assert calls == [False, True]
    assert b"evil" not in (tmp_path / "cfg" / "consent.json").read_bytes()

    async def refuse(request: object) -> bool:
        del request
        return False

    memory = MemoryConsentStore()
    assert await check_consent(first, refuse, memory) == {"a": False}
    assert memory.approved == {}

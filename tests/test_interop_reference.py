"""trio_mcp against the reference Python servers, as users run them, in both eras.

``mcp-server-time``, ``mcp-server-git`` and ``mcp-server-fetch`` (the modelcontextprotocol
servers repository, built on the official SDK, which speaks both eras), installed pinned in
``.peers/py-reference/`` by ``scripts/install-peers.sh``. Everything stays on loopback: the
fetch server reads pages from a server of this test on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio

import trio_mcp

from .interop_peers import reference_argv, skip_unless_reference_servers

pytestmark = pytest.mark.interop

ERAS = [("auto", "modern"), ("legacy", "legacy")]


@pytest.fixture(autouse=True)
def _reference_servers() -> None:
    skip_unless_reference_servers()


class TimeResult(msgspec.Struct):
    timezone: str
    datetime: str
    is_dst: bool


@pytest.mark.parametrize(("protocol", "era"), ERAS)
async def test_time_server_typed_and_validated_results(protocol: str, era: str) -> None:
    argv = reference_argv("mcp-server-time", "--local-timezone", "UTC")
    async with trio_mcp.open_mcp_session(argv, protocol=protocol) as session:  # type: ignore[arg-type]
        assert session.era == era
        tools = {tool.name: tool for tool in await session.list_tools()}
        assert {"get_current_time", "convert_time"} <= tools.keys()

        now = await session.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        assert now.validation is not None and now.validation.status == "valid"
        typed = await session.call_tool(
            "get_current_time", {"timezone": "Asia/Tokyo"}, result_type=TimeResult
        )
        assert typed.timezone == "Asia/Tokyo" and typed.datetime.endswith("+09:00")

        converted = await session.call_tool(
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert converted.validation is not None and converted.validation.status == "valid"
        assert isinstance(converted.structured_content, dict)
        assert "T21:00:00+09:00" in converted.structured_content["target"]["datetime"]

        # A tool error is a result, not an exception, until it is asked to be one.
        bad = await session.call_tool("get_current_time", {"timezone": "Not/A_Zone"})
        assert bad.is_error and "Not/A_Zone" in bad.text
        with pytest.raises(trio_mcp.ToolError):
            await session.call_tool(
                "get_current_time", {"timezone": "Not/A_Zone"}, result_type=TimeResult
            )


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "config", "user.name", "Test")
    (repo / "notes.txt").write_text("first\n")
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-q", "-m", "first commit")
    return repo


@pytest.mark.parametrize(("protocol", "era"), ERAS)
async def test_git_server_reads_and_commits_in_a_real_repository(
    repo: Path, protocol: str, era: str
) -> None:
    argv = reference_argv("mcp-server-git", "--repository", str(repo))
    path = {"repo_path": str(repo)}
    async with trio_mcp.open_mcp_session(argv, protocol=protocol) as session:  # type: ignore[arg-type]
        assert session.era == era
        names = {tool.name for tool in await session.list_tools()}
        assert {"git_status", "git_log", "git_add", "git_commit", "git_diff_unstaged"} <= names

        (repo / "notes.txt").write_text("first\nsecond\n")
        status = await session.call_tool("git_status", path)
        assert not status.is_error and "notes.txt" in status.text
        diff = await session.call_tool("git_diff_unstaged", path)
        assert "+second" in diff.text

        added = await session.call_tool("git_add", {**path, "files": ["notes.txt"]})
        assert not added.is_error, added.text
        committed = await session.call_tool("git_commit", {**path, "message": "second commit"})
        assert not committed.is_error, committed.text
        log = await session.call_tool("git_log", path)
        assert "second commit" in log.text and "first commit" in log.text

        # Outside the repository the server was started for: refused, as a tool error.
        outside = await session.call_tool("git_status", {"repo_path": str(repo.parent)})
        assert outside.is_error
    assert _git(repo, "log", "-1", "--format=%s").strip() == "second commit"


class _Pages(http.server.BaseHTTPRequestHandler):
    release: threading.Event

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(30)
        if self.path == "/missing":
            self.send_response(404)
            self.end_headers()
            return
        body = b"<html><head><title>T</title></head><body><h1>Hello</h1><p>"
        body += b"word " * 500 + b"</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    release = threading.Event()
    handler = type("Pages", (_Pages,), {"release": release})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.parametrize(("protocol", "era"), ERAS)
async def test_fetch_server_pages_errors_and_cancellation(
    site: str, protocol: str, era: str
) -> None:
    argv = reference_argv("mcp-server-fetch", "--ignore-robots-txt", "--allow-private-ips")
    async with trio_mcp.open_mcp_session(argv, protocol=protocol) as session:  # type: ignore[arg-type]
        assert session.era == era
        page = await session.call_tool("fetch", {"url": f"{site}/page", "max_length": 100})
        assert not page.is_error and "## Hello" in page.text
        assert "start_index of 100" in page.text  # the server's own paging hint
        raw = await session.call_tool(
            "fetch", {"url": f"{site}/page", "raw": True, "start_index": 10, "max_length": 50}
        )
        assert "<h1>Hello</h1>" in raw.text
        missing = await session.call_tool("fetch", {"url": f"{site}/missing"})
        assert missing.is_error and "404" in missing.text

        # A cancelled call is forgotten (the server is told) and the session goes on.
        with trio.move_on_after(0.5) as scope:
            await session.call_tool("fetch", {"url": f"{site}/slow"})
        assert scope.cancelled_caught
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("fetch", {"url": f"{site}/slow"}, timeout=0.5)
        again = await session.call_tool("fetch", {"url": f"{site}/page", "max_length": 20})
        assert not again.is_error and "Hello" in again.text

"""``trio-mcp``: explore an MCP server from the command line.

Usage::

    trio-mcp [options] TARGET info
    trio-mcp [options] TARGET tools
    trio-mcp [options] TARGET call NAME [JSON_ARGUMENTS]
    trio-mcp [options] TARGET resources | templates | prompts
    trio-mcp [options] TARGET read URI
    trio-mcp [options] TARGET prompt NAME [JSON_ARGUMENTS]

TARGET is a command line (quoted, split like a POSIX shell would), an ``http(s)://`` URL or a
``ws(s)://`` URL. Results are printed as JSON; errors go to stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any, cast

import trio

from . import _types as t
from ._connect import open_mcp_session
from ._exceptions import MCPError
from ._session import ClientSession

__all__ = ["main"]


def _json_arg(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    value: object = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("arguments must be a JSON object")
    return cast("dict[str, Any]", value)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trio-mcp",
        description="Explore an MCP server (stdio command, http(s):// or ws(s)://).",
    )
    parser.add_argument("target", help="server command line (quoted) or URL")
    parser.add_argument(
        "--protocol", default="auto", help="auto (default), legacy, or a modern version to pin"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("-v", "--verbose", action="store_true", help="log protocol details")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="server name, version, era, capabilities")
    sub.add_parser("tools", help="list tools")
    call = sub.add_parser("call", help="call a tool")
    call.add_argument("name")
    call.add_argument("arguments", nargs="?", help="JSON object")
    sub.add_parser("resources", help="list resources")
    sub.add_parser("templates", help="list resource templates")
    read = sub.add_parser("read", help="read a resource")
    read.add_argument("uri")
    sub.add_parser("prompts", help="list prompts")
    prompt = sub.add_parser("prompt", help="get a prompt")
    prompt.add_argument("name")
    prompt.add_argument("arguments", nargs="?", help="JSON object of strings")
    return parser


_EXPECTED_ERRORS = (MCPError, trio.TooSlowError, OSError, ValueError, TypeError)


async def _run(args: argparse.Namespace) -> Any:
    # The nursery-less form: errors from the block arrive bare, never as an ExceptionGroup.
    async with open_mcp_session(
        args.target, protocol=args.protocol, default_timeout=args.timeout
    ) as session:
        return await _command(session, args)


async def _command(session: ClientSession, args: argparse.Namespace) -> Any:
    command = args.command
    if command == "info":
        return {
            "server": t.to_builtins(session.server_info) if session.server_info else None,
            "era": session.era,
            "protocolVersion": session.protocol_version,
            "capabilities": t.to_builtins(session.server_capabilities),
            "instructions": session.instructions,
        }
    if command == "tools":
        return [t.to_builtins(tool) for tool in await session.list_tools()]
    if command == "call":
        return t.to_builtins(await session.call_tool(args.name, _json_arg(args.arguments)))
    if command == "resources":
        return [t.to_builtins(r) for r in await session.list_resources()]
    if command == "templates":
        return [t.to_builtins(r) for r in await session.list_resource_templates()]
    if command == "read":
        return t.to_builtins(await session.read_resource(args.uri))
    if command == "prompts":
        return [t.to_builtins(p) for p in await session.list_prompts()]
    if command == "prompt":
        return t.to_builtins(await session.get_prompt(args.name, _json_arg(args.arguments)))
    raise AssertionError(command)  # pragma: no cover


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``trio-mcp`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        result = trio.run(_run, args)
    except argparse.ArgumentTypeError as exc:
        print(f"trio-mcp: {exc}", file=sys.stderr)
        return 2
    except _EXPECTED_ERRORS as exc:
        print(f"trio-mcp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

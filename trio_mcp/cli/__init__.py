"""``trio-mcp``: explore an MCP server from the command line (``docs/cli.md``).

Usage:

```text
trio-mcp [options] TARGET                      # the interactive mode (a terminal)
trio-mcp [options] TARGET info | tools | resources | templates | prompts | ping
trio-mcp [options] TARGET call NAME [key=value | key:=JSON | key=@FILE | JSON | @FILE | @-]...
trio-mcp [options] TARGET read URI
trio-mcp [options] TARGET prompt NAME [key=value]...
trio-mcp auth login | status | logout TARGET
trio-mcp servers [--config FILE] [--json]
trio-mcp completion bash | zsh | fish
```

TARGET is a command line (quoted; split like a POSIX shell would), an ``http(s)://`` or
``ws(s)://`` URL, or the name of a server in a config file. Exit statuses: 0 success,
1 tool or server error (an unknown tool too), 2 usage, 3 connection, 4 auth, 5 timeout, 6 protocol,
130 interrupted. This module imports only `argparse` until a command runs, so
``--help`` is fast; the rest needs the ``cli`` extra (``rich``, ``prompt_toolkit``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._args import SERVER_COMMANDS
from ._args import VALUE_OPTIONS as _VALUE_OPTIONS
from ._args import HelpFormatter as _Formatter

__all__ = ["main"]

_COMMANDS = frozenset({*SERVER_COMMANDS, "repl"})
_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

_EPILOG = """\
examples:
  trio-mcp "python -m trio_mcp.testing" tools
  trio-mcp "python -m trio_mcp.testing" call add a=2 b=3.5
  trio-mcp https://example.com/mcp read demo://readme
  trio-mcp --json my-server call echo text=hi    (a server from a config file)
  trio-mcp "npx -y @modelcontextprotocol/server-everything"    (interactive)

arguments of call: key=value (coerced by the tool's input schema), key:=<json>, \
key=@file (the file's text), one JSON object, or @FILE / @- (a JSON object from a \
file or stdin). Lists show shortened descriptions on a terminal: add --full to see \
them whole.

other commands: trio-mcp servers (the configured servers and where each comes \
from), trio-mcp completion bash|zsh|fish (a shell completion script), \
trio-mcp auth login|status|logout TARGET.

exit status: 0 success, 1 tool or server error (an unknown tool too), 2 usage, \
3 connection, 4 auth, 5 timeout, 6 protocol, 130 interrupted. With --json errors \
are a JSON object on stderr.
"""

_CALL_EPILOG = """\
examples:
  trio-mcp "python -m trio_mcp.testing" call add a=2 b=3.5
  trio-mcp "python -m trio_mcp.testing" call echo '{"text": "hi"}'
  trio-mcp my-server call search query="trio nursery" limit:=5
  echo '{"a": 1, "b": 2}' | trio-mcp my-server call add @-
"""


def _add_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """The options every command takes (before or after the command word)."""

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("connection and output options")
    group.add_argument(
        "--json", action="store_true", default=default(False), help="JSON output for scripts"
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help="print every protocol message in and out (stderr)",
    )
    group.add_argument(
        "--log-level",
        choices=_LEVELS,
        default=default(None),
        metavar="LEVEL",
        help="ask the server for log messages at LEVEL and show them: " + ", ".join(_LEVELS),
    )
    group.add_argument(
        "--protocol",
        default=default("auto"),
        metavar="VERSION",
        help="auto (default), legacy, or a protocol version to pin",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=default(30.0),
        metavar="SECONDS",
        help="seconds for connecting and for each request (0: none; default 30)",
    )
    group.add_argument(
        "--config",
        default=default(None),
        metavar="FILE",
        help="config file with named servers (mcpServers or VS Code)",
    )
    group.add_argument(
        "-e",
        "--env",
        action="append",
        default=default(None),
        metavar="K=V",
        help="environment variable for a command-line server (repeatable)",
    )
    group.add_argument(
        "--inherit-env",
        action="store_true",
        default=default(False),
        help="pass this whole environment to the server (default: a safe minimum plus --env)",
    )
    group.add_argument(
        "--cwd", default=default(None), metavar="DIR", help="working directory of the server"
    )
    group.add_argument(
        "-H",
        "--header",
        action="append",
        default=default(None),
        metavar="K:V",
        help="HTTP header for a URL target (repeatable)",
    )
    group.add_argument(
        "--output",
        default=default(None),
        metavar="FILE",
        help="write the result to FILE instead of stdout (with --json: the exact JSON)",
    )
    group.add_argument(
        "-y",
        "--yes",
        action="store_true",
        default=default(False),
        help="run a server from this folder's config (.mcp.json...) without asking",
    )
    group.add_argument(
        "--no-input",
        action="store_true",
        default=default(False),
        help="never ask: decline sampling and elicitation requests",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trio-mcp",
        usage="trio-mcp [options] TARGET [COMMAND [ARGUMENTS ...]]",
        description="Explore an MCP server: a command line, an http(s):// or ws(s):// URL, "
        "or a server named in a config file. Without a command: the interactive mode.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="the server: a command line (quoted), an http(s):// or ws(s):// URL, "
        "or a server's name in a config file",
    )
    _add_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def command(
        name: str, text: str, usage: str = "", epilog: str | None = None
    ) -> argparse.ArgumentParser:
        found = sub.add_parser(
            name,
            help=text,
            description=text,
            usage=f"trio-mcp [options] TARGET {name}{usage} [options]",
            epilog=epilog,
            formatter_class=_Formatter,
        )
        _add_options(found, top=False)
        return found

    def listing(name: str, text: str) -> None:
        found = command(name, text, " [--full]")
        found.add_argument(
            "--full",
            action="store_true",
            help="show every description whole (on a terminal they are shortened)",
        )

    command("info", "server name, version, era, capabilities")
    listing("tools", "list the tools with their arguments")
    call = command("call", "call a tool", " NAME [ARGUMENTS ...]", _CALL_EPILOG)
    call.add_argument(
        "name", metavar="NAME", help="the tool's name, as 'tools' lists it", nargs="?"
    )
    call.add_argument(
        "arguments",
        metavar="ARGUMENTS",
        nargs="*",
        help="key=value (coerced by the tool's schema), key:=JSON, key=@FILE (the file's "
        "text), one JSON object, or @FILE / @- (a JSON object from a file or stdin)",
    )
    listing("resources", "list resources")
    listing("templates", "list resource templates")
    read = command("read", "read a resource", " URI")
    read.add_argument("uri", metavar="URI", help="the resource's URI, as 'resources' lists it")
    listing("prompts", "list prompts")
    prompt = command("prompt", "get a prompt", " NAME [key=value ...]")
    prompt.add_argument("name", metavar="NAME", help="the prompt's name, as 'prompts' lists it")
    prompt.add_argument(
        "arguments",
        metavar="ARGUMENTS",
        nargs="*",
        help="key=value (sent as typed: prompt arguments are strings) or a JSON object",
    )
    command("ping", "check that the server answers")
    command("repl", "the interactive mode (the default on a terminal)")
    return parser


def _auth_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trio-mcp auth",
        formatter_class=_Formatter,
        description="Log in to an OAuth-protected HTTP server once; later commands use the "
        "stored token (kept in $XDG_CONFIG_HOME/trio-mcp/tokens.json, mode 0600).",
    )
    parser.add_argument("action", choices=["login", "status", "logout"])
    parser.add_argument("target", help="the server's http(s):// URL or config name")
    parser.add_argument("--json", action="store_true", help="JSON output for scripts")
    parser.add_argument("--config", help="config file with named servers")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to log in")
    parser.add_argument("--client-id", help="a pre-registered OAuth client id")
    parser.add_argument("--scope", action="append", help="a scope to ask for (repeatable)")
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL instead of opening a browser"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="trace each login step (stderr)"
    )
    return parser


def _positionals(argv: Sequence[str]) -> list[str]:
    """The words that are not options nor option values."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in _VALUE_OPTIONS:
            skip = True
            continue
        if word.startswith("-") and word not in ("-", "@-"):
            continue
        out.append(word)
    return out


def _first_word(argv: Sequence[str]) -> str | None:
    found = _positionals(argv)
    return found[0] if found else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``trio-mcp`` command line.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (see the module's docstring).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["__complete"]:  # called by the completion scripts
        from ._completion import run_complete

        return run_complete(words[1:])
    positionals = _positionals(words)
    if positionals == ["servers"]:  # (a server named "servers" still runs: `servers tools`)
        words.remove("servers")
        from ._servers import run_servers, servers_parser

        return run_servers(servers_parser().parse_args(words))
    if positionals[:1] == ["completion"] and (
        len(positionals) == 1 or positionals[1] not in _COMMANDS
    ):
        from ._completion import completion_parser, run_completion

        words.remove("completion")
        return run_completion(completion_parser().parse_args(words))
    if _first_word(words) == "auth":
        words.remove("auth")
        auth_args = _auth_parser().parse_args(words)
        from ._auth import run_auth

        return run_auth(auth_args)
    parser = _parser()
    if len(positionals) >= 2 and positionals[1] not in _COMMANDS:
        from ._args import did_you_mean

        word = positionals[1]
        hint = did_you_mean(word, sorted(_COMMANDS))
        import textwrap  # (an error path only)

        commands = textwrap.fill(
            "the commands: " + ", ".join(sorted(_COMMANDS)),
            width=76,
            initial_indent="  ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        parser.error(f"unknown command {word!r}{hint}\n{commands}")
    args = parser.parse_args(words)
    if args.command == "repl":
        args.command = None
    if args.command is None and args.output is not None:
        parser.error("--output needs a COMMAND (the interactive mode prints on the terminal)")
    if args.command is None and not (sys.stdin.isatty() and sys.stdout.isatty()):
        parser.error("give a COMMAND (the interactive mode needs a terminal)")
    from ._run import run

    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

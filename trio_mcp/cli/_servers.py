"""Configured servers: where each name comes from (``trio-mcp servers``), and consent before
a server from the current folder's config (``.mcp.json``, ...) runs.

A config file in the folder you stand in belongs to whoever wrote the project (a cloned
repository, a downloaded archive): a name there must not silently run a command. The first
run of each project entry, and every run after the entry changed, shows what would run and
asks (on a terminal), or needs ``--yes``; approvals are kept by the library's consent store
([`trio_mcp.config.FileConsentStore`][trio_mcp.config.FileConsentStore], pinned to the entry's
fingerprint).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from .._terminal import for_terminal, json_for_terminal
from ._args import UsageError

if TYPE_CHECKING:
    from .._config import ConfigInput, ConsentRequest, ServerConfig

__all__ = [
    "ConfigSource",
    "Unexpanded",
    "approve_project_server",
    "config_sources",
    "run_servers",
    "servers_parser",
]

USUAL_CONFIGS: tuple[tuple[str, str], ...] = (
    (".mcp.json", "project"),
    (".cursor/mcp.json", "project"),
    (".vscode/mcp.json", "project"),
    ("~/.cursor/mcp.json", "user"),
    ("~/.config/Claude/claude_desktop_config.json", "user"),
    ("~/Library/Application Support/Claude/claude_desktop_config.json", "user"),
    ("~/.codeium/windsurf/mcp_config.json", "user"),
)
"""Config files looked at for a named target when ``--config`` is not given, in order, and what they
are: ``project`` (the current folder's) or ``user`` (the home folder's)."""


@dataclass(frozen=True)
class ConfigSource:
    """A config file the command reads, and its kind: ``project``, ``user`` or ``--config``."""

    path: str
    origin: str


def config_sources(explicit: str | None, *, existing: bool = True) -> list[ConfigSource]:
    """The config files a named target is looked up in, in order (first match wins)."""
    if explicit:
        return [ConfigSource(explicit, "--config")]
    found = [ConfigSource(os.path.expanduser(path), origin) for path, origin in USUAL_CONFIGS]
    return [s for s in found if not existing or os.path.isfile(s.path)]


def describe_target(server: ServerConfig) -> str:
    """What an entry runs or opens, as one line (``command args...`` or the URL)."""
    if server.command is not None:
        return shlex.join([server.command, *server.args])
    return server.url or ""


# -- consent for a project's config ---------------------------------------------------------


def pinned_lines(details: Mapping[str, str]) -> list[str]:
    """What an approval pins, one line a part, safe on a terminal (``  env NAME = value``)."""
    return [
        f"  {for_terminal(part, newlines=False)} = {for_terminal(value, newlines=False)}"
        for part, value in details.items()
    ]


class _ThisRunOnly:
    """A consent store that reads the real one and remembers nothing (``--yes``)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def get(self, key: str) -> str | None:
        found: str | None = self._store.get(key)
        return found

    def set(self, key: str, fingerprint: str) -> None:
        del key, fingerprint


def _say(text: str) -> None:
    print(f"trio-mcp: {text}", file=sys.stderr, flush=True)


async def _ask_yes(question: str) -> bool:
    def ask() -> str:
        sys.stderr.write(question)
        sys.stderr.flush()
        return sys.stdin.readline()

    answer = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
    return answer.strip().lower() in ("y", "yes")


async def approve_project_server(args: argparse.Namespace, server: ServerConfig) -> None:
    """Let a server from the current folder's config run only with the user's consent.

    A visible notice always says where the name came from (and which command on PATH of the
    same name is *not* run). An entry approved before, unchanged, runs; a new or changed
    one is asked about on a terminal (the answer is remembered), runs this time with
    ``--yes`` (nothing remembered), and is refused otherwise.

    Raises:
        UsageError: Not approved (declined, or nobody to ask and no ``--yes``).
    """
    from .._config import FileConsentStore, check_consent

    name = for_terminal(server.name, newlines=False)
    source = for_terminal(os.path.abspath(server.source), newlines=False)  # noqa: ASYNC240
    what = for_terminal(describe_target(server), newlines=False)
    on_path = shutil.which(server.name)
    _say(f"{name!r} is a server of the project config {source}: {what}")
    if on_path:
        shown = for_terminal(on_path, newlines=False)
        _say(f"(the command {name!r} on PATH is not run; give its path to run it: {shown})")
    yes = bool(getattr(args, "yes", False))
    interactive = sys.stdin.isatty() and not getattr(args, "no_input", False)

    async def approve(request: ConsentRequest) -> bool:
        if request.changes:
            _say(f"changed since approved: {for_terminal(', '.join(request.changes))}")
        for line in pinned_lines(request.details):
            _say(line)
        if yes:
            _say("running it (--yes; not remembered)")
            return True
        if not interactive:
            return False
        change = "it changed since you approved it" if request.changed else "not approved yet"
        return await _ask_yes(f"trio-mcp: {change}. Run it? [y/N] ")

    store = FileConsentStore()
    verdict = await check_consent(
        {server.name: server}, approve, _ThisRunOnly(store) if yes else store
    )
    if not verdict.get(server.name):
        how = (
            "declined"
            if interactive and not yes
            else "not approved (new, or changed since approved); run it once on a terminal "
            "to approve it, or pass --yes to run it this time"
        )
        raise UsageError(f"the project config's server {name!r}: {how}")


# -- trio-mcp servers -------------------------------------------------------------------------


class Unexpanded(Mapping[str, str]):
    """An environment that leaves every ``${env:NAME}`` as written (nothing secret shown)."""

    def __getitem__(self, key: str) -> str:
        return f"${{env:{key}}}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


async def _unasked(config_input: ConfigInput) -> str:
    await trio.lowlevel.checkpoint()
    return f"${{input:{config_input.id}}}"


def servers_parser() -> argparse.ArgumentParser:
    """The command line of ``trio-mcp servers``."""
    parser = argparse.ArgumentParser(
        prog="trio-mcp servers",
        description="List the servers of the config files trio-mcp reads for a server "
        "name (or of --config FILE), in lookup order, with the file and its kind (project: "
        "this folder's, asked about before it runs; user: your home folder's; --config). "
        "Nothing is started; ${env:...} and ${input:...} are shown as written.",
    )
    parser.add_argument("--config", help="list this config file only")
    parser.add_argument("--json", action="store_true", help="JSON output for scripts")
    return parser


async def _collect(explicit: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    from .._config import FileConsentStore, consent_key, load_config, pinned_parts
    from .._exceptions import ConfigError

    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    first: dict[str, str] = {}
    store = FileConsentStore()
    for source in config_sources(explicit):
        try:
            config = await load_config(source.path, environ=Unexpanded(), inputs=_unasked)
        except ConfigError as exc:
            errors.append(str(exc))
            continue
        for name, server in config.servers.items():
            row: dict[str, Any] = {
                "name": name,
                "transport": server.transport,
                "target": describe_target(server),
                "origin": source.origin,
                "file": os.path.abspath(source.path),  # noqa: ASYNC240 (no I/O)
                "shadowedBy": first.get(name),
            }
            if source.origin == "project":
                row["approved"] = store.get(consent_key(server)) == server.fingerprint
                row["pins"] = pinned_parts(server)
            rows.append(row)
            first.setdefault(name, row["file"])
    return rows, errors


def run_servers(args: argparse.Namespace) -> int:
    """Run ``trio-mcp servers``; returns the exit status (2 when a config file is invalid)."""
    rows, errors = trio.run(_collect, args.config)
    if args.json:
        print(json_for_terminal({"servers": rows, "errors": errors}, indent=2))
    elif not rows:
        print("(no servers configured)" if not errors else "(no servers listed)")
    else:
        table = [["NAME", "TRANSPORT", "TARGET", "FROM"]]
        for row in rows:
            where = f"{row['origin']}: {row['file']}"
            if row["shadowedBy"]:
                where += f" (shadowed by {row['shadowedBy']})"
            elif row.get("approved") is False:
                where += " (asked before it runs)"
            cells = [row["name"], row["transport"], row["target"], where]
            table.append([for_terminal(c, newlines=False) for c in cells])
        widths = [max(len(r[i]) for r in table) for i in range(3)]
        entries: list[dict[str, Any] | None] = [None, *rows]  # (None: the heading)
        for r, entry in zip(table, entries, strict=True):
            print("  ".join([*(r[i].ljust(widths[i]) for i in range(3)), r[3]]).rstrip())
            if entry is not None and "pins" in entry and not entry["shadowedBy"]:
                for line in pinned_lines(entry["pins"]):  # what running it would approve
                    print(f"  {line}")
    for error in errors:
        print(f"trio-mcp: {for_terminal(error)}", file=sys.stderr)
    return 2 if errors else 0

"""``trio-mcp auth login|status|logout TARGET``: OAuth tokens in the file token store."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any, cast

import trio

from .._exceptions import MCPError
from .._terminal import for_terminal
from ._app import report
from ._args import UsageError
from ._connection import EXIT_OK, token_store_path
from ._output import Output

__all__ = ["run_auth"]


async def _url(args: argparse.Namespace) -> str:
    target: str = args.target
    if target.lower().startswith(("http://", "https://")):
        return target
    from ._connection import _from_config  # pyright: ignore[reportPrivateUsage]

    namespace = argparse.Namespace(target=target, config=args.config)
    found = await _from_config(namespace)
    if found is None or not isinstance(found[0], str) or not found[0].startswith("http"):
        raise UsageError(f"{target!r} is not an http(s):// URL nor an HTTP server in a config file")
    return found[0]


def _entries(url: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """The stored tokens whose resource covers ``url``: (issuer, resource, client, token)."""
    try:
        data: Any = json.loads(token_store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    tokens: Any = cast("dict[str, Any]", data).get("tokens") if isinstance(data, dict) else None
    found: list[tuple[str, str, str, dict[str, Any]]] = []
    if not isinstance(tokens, dict):
        return found
    wanted = url.rstrip("/")
    for key, token in cast("dict[str, Any]", tokens).items():
        try:
            issuer, resource, client_id = json.loads(key)
        except (ValueError, TypeError):
            continue
        resource_text = str(resource).rstrip("/")
        if wanted == resource_text or wanted.startswith(resource_text + "/"):
            found.append(
                (str(issuer), str(resource), str(client_id), cast("dict[str, Any]", token))
            )
    return found


async def _login(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from .._connect import open_mcp_session
    from ..auth import FileTokenStore, LoopbackBrowser, OAuth
    from ..transports import StreamableHTTPParameters

    browser = LoopbackBrowser(open_browser=not args.no_browser)
    auth = OAuth(
        store=FileTokenStore(token_store_path()),
        user_agent=browser,
        client_id=args.client_id,
        scopes=args.scope,
    )
    with trio.fail_after(args.timeout):
        async with open_mcp_session(StreamableHTTPParameters(url, auth=auth)) as session:
            info = session.server_info
            return {"url": url, "server": info.name if info else None, "loggedIn": True}


async def _main(args: argparse.Namespace, out: Output) -> int:
    url = await _url(args)
    if args.action == "login":
        outcome = await _login(args, url)
        if out.json_mode:
            out.json(outcome)
        else:
            out.line(f"logged in to {url}; the token is in {token_store_path()}", "green")
        return EXIT_OK
    entries = _entries(url)
    if args.action == "status":
        now = time.time()
        rows: list[dict[str, Any]] = []
        for issuer, resource, client_id, token in entries:
            expires = token.get("expires_at")
            rows.append(
                {
                    "issuer": issuer,
                    "resource": resource,
                    "clientId": client_id,
                    "scope": token.get("scope"),
                    "expiresIn": round(expires - now)
                    if isinstance(expires, (int, float))
                    else None,
                    "refreshable": bool(token.get("refresh_token")),
                }
            )
        if out.json_mode:
            out.json({"url": url, "loggedIn": bool(rows), "tokens": rows})
        elif not rows:
            out.line(f"not logged in to {url} (trio-mcp auth login {url})")
        else:
            out.table(
                "Tokens",
                ["Issuer", "Client", "Scope", "Expires in", "Refresh"],
                [
                    [
                        r["issuer"],
                        r["clientId"],
                        str(r["scope"] or ""),
                        "never" if r["expiresIn"] is None else f"{r['expiresIn']} s",
                        "yes" if r["refreshable"] else "no",
                    ]
                    for r in rows
                ],
            )
        return EXIT_OK
    from ..auth import FileTokenStore

    store = FileTokenStore(token_store_path())
    for issuer, resource, client_id, _ in entries:
        await store.delete_token(issuer, resource, client_id)
    if out.json_mode:
        out.json({"url": url, "removed": len(entries)})
    else:
        out.line(f"logged out of {url} ({len(entries)} token(s) removed)")
    return EXIT_OK


class _TerminalFormatter(logging.Formatter):
    """A trace line for a person: every peer-controlled character made visible."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(f"auth: {record.getMessage()}", newlines=False)


def _trace_to_stderr() -> None:
    """``-v``: the ``trio_mcp.auth`` DEBUG trace (each login step, no secret) on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter())
    auth_logger = logging.getLogger("trio_mcp.auth")
    auth_logger.addHandler(handler)
    auth_logger.setLevel(logging.DEBUG)


def run_auth(args: argparse.Namespace) -> int:
    """Run ``trio-mcp auth ...``; returns the exit status."""
    out = Output(json_mode=args.json)
    if getattr(args, "verbose", False):
        _trace_to_stderr()
    try:
        return trio.run(_main, args, out)
    except (MCPError, UsageError, trio.TooSlowError, OSError) as exc:
        return report(None, args.json, exc)
    except KeyboardInterrupt:
        from ._app import Interrupted

        return report(None, args.json, Interrupted("interrupted"))

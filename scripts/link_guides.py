"""Link every API name the guides mention to its entry in the API reference.

A guide names an API in backticks: `` `ClientSession` ``, `` `open_mcp_session(target)` ``,
`` `trio_mcp.auth.OAuth` ``, `` `ServerStatus.error` ``, `` `session.call_tool(...)` ``.
This script turns each such span, outside code blocks, headings and existing links, into a
mkdocs cross-reference, `` [`ClientSession`][trio_mcp.ClientSession] ``, when the reference
has an entry for it. Which entries exist is read from the built site (the ids of the
reference pages), so a link never points at nothing: it builds the site first.

A bare name is looked up in the feature namespaces first, then in ``trio_mcp`` (where a
name is documented once); ``session.X`` is ``ClientSession.X`` and ``group.X`` is
``ServerGroup.X``. Running it twice changes nothing (a linked span is left alone)::

    python scripts/link_guides.py          # link the guides (builds the site in a temp dir)
    python scripts/link_guides.py --check  # exit 1 if a guide has an unlinked API name

``tests/test_docs_site.py`` uses ``Linker`` to check the built site the same way.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT))  # this checkout's trio_mcp

from trio_mcp._public import NAMESPACES  # noqa: E402  (where a bare name is looked up, in order)

#: The variable names the guides use for an object, and the class they stand for.
RECEIVERS = {
    "session": "ClientSession",
    "group": "ServerGroup",
    "status": "ServerStatus",
    "result": "CallToolResult",
}

#: Pages that are not guides: the reference and the contributors' map of the code.
NOT_GUIDES = ("reference.md", "layout.md")

#: Reference ids that are headings written by hand, not mkdocstrings entries: the
#: cross-reference syntax does not reach them, so a guide links them by page and anchor.
HEADING_IDS = {
    "trio_mcp.types.UNSET": "api/types.md#trio_mcp.types.UNSET",
    "trio_mcp.types.UnsetType": "api/types.md#trio_mcp.types.UnsetType",
}

NAME = re.compile(r"^([A-Za-z_][\w.]*)(\(.*\))?$")
SPAN = re.compile(r"(?<![`\w])`([^`\n]+)`(?!`)")
FENCE = re.compile(r"^\s*(```|~~~)")


class Linker:
    """Find the reference entry of a name written in a guide."""

    def __init__(self, ids: set[str]) -> None:
        self.ids = ids

    def target(self, code: str) -> str | None:
        """The reference id ``code`` (a name, or a call of one) links to, or None."""
        match = NAME.match(code.strip())
        if match is None:
            return None
        name = match[1].rstrip(".")
        if name == "trio_mcp":
            return None  # the project's name as often as the package: left as it is
        head, _, rest = name.partition(".")
        if head in RECEIVERS and rest:
            head, name = RECEIVERS[head], f"{RECEIVERS[head]}.{rest}"
        candidates = []
        if head == "trio_mcp":
            candidates.append(name)
            parts = name.split(".")
            if len(parts) >= 2 and f"trio_mcp.{parts[1]}" not in NAMESPACES:
                short = ".".join(parts[1:])  # trio_mcp.OAuth: documented as trio_mcp.auth.OAuth
                candidates += [f"{namespace}.{short}" for namespace in NAMESPACES]
        else:  # a bare name: never a namespace (`auth` is more likely the argument)
            candidates += [f"{namespace}.{name}" for namespace in NAMESPACES]
            candidates = [candidate for candidate in candidates if candidate not in NAMESPACES]
        return next((candidate for candidate in candidates if candidate in self.ids), None)


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key == "id" and value and value.startswith("trio_mcp"):
                self.ids.add(value)


def reference_ids(site: Path) -> set[str]:
    """The ids of every entry of the built reference pages."""
    parser = _Ids()
    for page in [site / "reference" / "index.html", *sorted((site / "api").glob("*/index.html"))]:
        parser.feed(page.read_text("utf-8"))
    return parser.ids


def build_site(out: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=True,
    )


def link_page(text: str, linker: Linker) -> tuple[str, int]:
    """``text`` with its API names linked, and how many were."""
    out: list[str] = []
    fenced = False
    count = 0
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        if fenced or FENCE.match(line) or line.startswith("#"):
            out.append(line)
            continue

        def replace(match: re.Match[str], line: str = line) -> str:
            nonlocal count
            start, end = match.span()
            if line[start - 1 : start] == "[" and line[end : end + 1] == "]":
                return match[0]  # already a link's text
            if line[:start].count("[") > line[:start].count("]"):
                return match[0]  # inside a link's text: a link holds no link
            target = linker.target(match[1])
            if target is None:
                return match[0]
            count += 1
            if target in HEADING_IDS:
                return f"[{match[0]}]({HEADING_IDS[target]})"
            return f"[{match[0]}][{target}]"

        out.append(SPAN.sub(replace, line))
    return "".join(out), count


def guides() -> list[Path]:
    return [page for page in sorted(DOCS.glob("*.md")) if page.name not in NOT_GUIDES]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing, exit 1 if needed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_site(Path(tmp))
        linker = Linker(reference_ids(Path(tmp)))
    total = 0
    for page in guides():
        text = page.read_text("utf-8")
        new, count = link_page(text, linker)
        if count:
            total += count
            print(
                f"{page.relative_to(ROOT)}: {count} names {'to link' if args.check else 'linked'}"
            )
            if not args.check:
                page.write_text(new, "utf-8")
    return 1 if args.check and total else 0


if __name__ == "__main__":
    sys.exit(main())

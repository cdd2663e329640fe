"""The documentation site as a reader gets it: built with ``mkdocs build --strict``.

No Sphinx markup shows verbatim on a page, every internal link and anchor leads somewhere,
every API name a guide mentions (in backticks) links to its reference entry, no code line
of a page scrolls sideways, and no reference page is one huge page. The site is built once
for the module (a few seconds); without mkdocs installed (it is in the ``ci`` env) the
tests that need it are skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import posixpath
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from trio_mcp._public import NAMESPACES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: Pages that are not guides: the reference itself, and the contributors' map of the code.
NOT_GUIDES = ("reference/", "api/", "layout/", "404.html", "search/")

#: The widest code line a page may show without scrolling sideways (mkdocs-material's
#: content column at 1280 pixels shows about 90 characters of code).
CODE_WIDTH = 88

#: Pages whose code blocks are verbatim terminal transcripts, owned by the CLI's own
#: 80-column work (issue 36, the CLI half): not checked here yet.
WIDE_PAGES = ("cli.md",)

#: The largest reference page, in bytes (the one-page reference was 1 MB).
PAGE_LIMIT = 450_000

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|exc|data|mod|obj|const):")
STRAY = re.compile(r"\w::(\s|$)")


class Page(HTMLParser):
    """What the tests need of one built page: ids, links, text and inline code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []  # text outside <pre> and <code>
        self.unlinked_code: list[str] = []  # inline code outside links and headings
        self._open: list[str] = []
        self._code: list[str] | None = None
        self._main = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")
        if tag == "article":
            self._main = True
        if tag in ("br", "img", "input", "meta", "link", "hr", "wbr"):
            return
        self._open.append(tag)
        if tag == "code" and "pre" not in self._open:
            self._code = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "code" and self._code is not None:
            within = set(self._open)
            if self._main and not within & {"a", "h1", "h2", "h3", "h4", "h5", "h6", "pre"}:
                self.unlinked_code.append("".join(self._code))
            self._code = None
        if tag == "article":
            self._main = False
        if tag in self._open:
            while self._open and self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._code is not None:
            self._code.append(data)
        elif self._main and "pre" not in self._open and "script" not in self._open:
            self.text.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (it is in the ci env)")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    return out


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[str, Page]:
    parsed: dict[str, Page] = {}
    for path in sorted(site.rglob("*.html")):
        page = Page()
        page.feed(path.read_text("utf-8"))
        parsed[path.relative_to(site).as_posix()] = page
    return parsed


def _reference(name: str) -> bool:
    return name.startswith(("reference/", "api/"))


def test_no_sphinx_markup_shows_on_the_api_pages(pages: dict[str, Page]) -> None:
    shown = []
    for name, page in pages.items():
        text = " ".join(page.text)
        shown += [
            f"{name}: ...{text[max(0, m.start() - 60) : m.end() + 40]}..."
            for m in ROLE.finditer(text)
        ]
        if _reference(name):
            shown += [
                f"{name}: ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
                for m in STRAY.finditer(text)
            ]
    assert not shown, "\n".join(shown)


def test_no_cross_reference_is_left_unresolved(site: Path) -> None:
    # mkdocstrings leaves a cross-reference it cannot resolve as its literal text
    # (``[name][trio_mcp.x.Y]``) without failing the build: find any outside code.
    import re

    code = re.compile(r"<pre[^>]*>.*?</pre>|<code[^>]*>.*?</code>", re.S)
    left = []
    for path in sorted(site.rglob("*.html")):
        text = code.sub("", path.read_text("utf-8"))
        left += [
            f"{path.relative_to(site)}: {m}" for m in re.findall(r"\]\[trio_mcp[\w.]*\]", text)
        ]
    assert not left, left


def test_every_internal_link_and_anchor_resolves(site: Path, pages: dict[str, Page]) -> None:
    broken = []
    for name, page in pages.items():
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            if parts.path:
                base = "" if parts.path.startswith("/") else posixpath.dirname(name)
                path = unquote(parts.path).lstrip("/")
                target = posixpath.normpath(posixpath.join(base, path))
                if parts.path.endswith("/") or (site / target).is_dir():
                    target = posixpath.join(target, "index.html")
            else:
                target = name
            if not (site / target).is_file():
                broken.append(f"{name}: {href} (no such file)")
            elif (
                parts.fragment
                and target in pages
                and unquote(parts.fragment) not in pages[target].ids
            ):
                broken.append(f"{name}: {href} (no such anchor)")
    assert not broken, "\n".join(broken)


def _linker() -> object:
    spec = importlib.util.spec_from_file_location(
        "link_guides", ROOT / "scripts" / "link_guides.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_api_name_in_a_guide_links_to_the_reference(
    site: Path, pages: dict[str, Page]
) -> None:
    # An API name is a name in backticks that has a reference entry (scripts/link_guides.py
    # finds it the same way, and links it).
    link_guides: Any = _linker()
    linker = link_guides.Linker(link_guides.reference_ids(site))
    missing = []
    for name, page in pages.items():
        if name.startswith(NOT_GUIDES):
            continue
        missing += [f"{name}: `{code}`" for code in page.unlinked_code if linker.target(code)]
    assert not missing, (
        f"{len(missing)} API names without a link (run scripts/link_guides.py):\n"
        + "\n".join(missing)
    )


def test_no_reference_page_is_huge(site: Path) -> None:
    sizes = {p.relative_to(site).as_posix(): p.stat().st_size for p in site.rglob("*.html")}
    huge = {name: size for name, size in sizes.items() if _reference(name) and size > PAGE_LIMIT}
    assert not huge


def _code_lines(page: Path) -> Iterator[tuple[int, str]]:
    fence = None
    for number, line in enumerate(page.read_text("utf-8").splitlines(), 1):
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is not None:
            yield number, line


def test_no_code_line_of_the_docs_scrolls_sideways() -> None:
    wide = [
        f"{page.relative_to(ROOT)}:{number}: {len(line)} characters"
        for page in sorted(DOCS.rglob("*.md"))
        if page.name not in WIDE_PAGES
        for number, line in _code_lines(page)
        if len(line) > CODE_WIDTH
    ]
    assert not wide, "\n".join(wide)


def test_every_public_name_has_its_reference_entry(pages: dict[str, Page]) -> None:
    ids = set().union(*(page.ids for name, page in pages.items() if _reference(name)))
    missing = []
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name in module.__all__:
            if not any(f"{place}.{name}" in ids for place in NAMESPACES):
                missing.append(f"{namespace}.{name}")
    assert not missing, missing


def test_every_method_of_client_session_has_its_entry(pages: dict[str, Page]) -> None:
    # docs/api/session.md lists ClientSession's members by hand, grouped by what they are
    # for: a method added to the session (or one of its mixins) must be added there too.
    import trio_mcp

    ids = pages["api/session/index.html"].ids
    members = [
        name
        for name in dir(trio_mcp.ClientSession)
        if not name.startswith("_") and getattr(trio_mcp.ClientSession, name).__doc__
    ]
    missing = [name for name in members if f"trio_mcp.ClientSession.{name}" not in ids]
    assert not missing, f"add these to docs/api/session.md: {missing}"


def test_searching_call_a_tool_or_connect_to_a_server_finds_the_quick_start(site: Path) -> None:
    import json

    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    (page,) = [doc for doc in index["docs"] if doc["location"] == "quickstart/"]
    assert page.get("boost", 1) > 1  # ranked above the pages that merely mention the words
    assert "connect to a server" in page["title"].lower()
    assert "call a tool" in page["title"].lower()

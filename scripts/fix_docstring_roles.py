"""Rewrite Sphinx markup in trio_mcp's docstrings into what mkdocstrings renders.

The API reference is built by mkdocstrings, which reads Markdown: a Sphinx role
(``:class:`Name```, ``:meth:`~trio_mcp.X.y```, ``:func:``, ``:attr:``, ``:exc:``,
``:data:``, ``:mod:``, ``:obj:``, ``:const:``) would show verbatim on the page, and so would
the ``::`` that opens a reStructuredText literal block. This script rewrites, in every
``.py`` file under ``trio_mcp/`` (the generated bridges excepted: they are regenerated from
their sources at the end):

* a role naming something the reference documents into a mkdocstrings cross-reference,
  ``[`Name`][trio_mcp.public.path.Name]``: a relative name (``ClientSession``,
  ``.call_tool``, ``ToolsAPI.call_tool``) is resolved in the scope of the docstring that
  holds it, then given its public path, the namespace that re-exports it (``trio_mcp``,
  ``trio_mcp.types``, ``trio_mcp.groups``, ...; a method of a session mixin is documented on
  ``trio_mcp.ClientSession``). The ``~`` short form keeps only the last name as link text;
  methods and functions get ``()``;
* a role naming anything else (a private name, trio, msgspec, the standard library) into
  plain code, ``` `trio.TooSlowError` ```;
* a ``#:`` comment above a module or class attribute into the docstring after it (which
  is what mkdocstrings reads);
* a ``text::`` paragraph and its indented literal block into ``text:`` and a fenced code
  block (``python`` when the block parses as Python, ``text`` otherwise); ``Example::``
  becomes ``For example:`` so that no Google-style section is started by accident.

It is idempotent: a file it rewrote has no role, no ``#:`` comment and no ``::`` block
left, so running it again changes nothing. Run it from the repository root after merging
branches that may have added Sphinx markup::

    python scripts/fix_docstring_roles.py          # rewrite, then regenerate the bridges
    python scripts/fix_docstring_roles.py --check  # exit 1 if anything would change
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's trio_mcp

from trio_mcp._public import NAMESPACES  # noqa: E402

PACKAGE = "trio_mcp"

#: The bridge sessions: the reference shows only what differs from ClientSession (their
#: other methods are ClientSession's, generated), so only these members are link targets.
RENDERED = {
    "trio_mcp.BlockingSession": ("close", "closed", "async_session"),
    "trio_mcp.AsyncioSession": ("aclose", "closed", "async_session"),
}

LIMIT = 100  # ruff's line length (pyproject.toml)

#: Files written by scripts/gen_bridges.py: never edited, regenerated.
GENERATED = re.compile(r"^_(blocking|asyncio)_api(_\w+)?\.py$")

ROLE = re.compile(
    r":(?:py:)?(?P<kind>class|meth|func|attr|exc|data|mod|obj|const)"
    r":`(?P<body>[^`]+)`"
)
EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


@dataclass(frozen=True)
class Scope:
    """One class or function of a source file: the lines it spans and its dotted name."""

    first: int
    last: int
    qualname: str


class Resolver:
    """Resolve names written in docstrings to the path where the reference documents them."""

    def __init__(self) -> None:
        self.package = griffe.load(
            PACKAGE,
            search_paths=[str(ROOT)],
            resolve_aliases=True,
            resolve_implicit=False,
            resolve_external=False,
        )
        self.public: dict[str, str] = {}  # canonical path -> documented path
        self.rendered: set[str] = set()  # every path the reference has an entry for
        for namespace in NAMESPACES:
            module = self._get(namespace)
            if not isinstance(module, griffe.Module):
                continue
            self.public.setdefault(module.path, namespace)
            for name in module.exports or ():
                target = self._final(module.members.get(name))
                if target is None or not _documented(target):
                    continue
                self.public.setdefault(target.path, f"{namespace}.{name}")
        for canonical, path in list(self.public.items()):
            cls = self._get(canonical)
            if isinstance(cls, griffe.Class):
                # mkdocs.yml renders inherited members (``inherited_members: true``): a
                # private base's methods are documented on each public class using them.
                self._add_members(cls, path, inherited=True)
        self.rendered |= set(self.public.values())

    def _add_members(self, cls: griffe.Class, path: str, *, inherited: bool) -> None:
        members = cls.all_members if inherited else cls.members
        for name, member in members.items():
            if name.startswith("_") or name not in RENDERED.get(path, (name,)):
                continue
            target = self._final(member)
            if target is None or not _documented(target):
                continue
            if not inherited and target.parent is not None and target.parent.path != cls.path:
                continue  # an alias in the class body: documented where it is defined
            self.rendered.add(f"{path}.{name}")
            own = target.parent is not None and target.parent.path == cls.path
            if own:
                self.public[target.path] = f"{path}.{name}"  # its own class wins
            else:
                self.public.setdefault(target.path, f"{path}.{name}")

    def _get(self, path: str) -> griffe.Object | None:
        parts = path.split(".")
        if parts[0] != PACKAGE:
            return None
        obj: griffe.Object | None = self.package
        for part in parts[1:]:
            if obj is None:
                return None
            members = obj.all_members if isinstance(obj, griffe.Class) else obj.members
            obj = self._final(members.get(part))
        return obj

    @staticmethod
    def _final(member: griffe.Object | griffe.Alias | None) -> griffe.Object | None:
        if member is None:
            return None
        if isinstance(member, griffe.Alias):
            try:
                target = member.final_target
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None
            return target if isinstance(target, griffe.Object) else None
        return member

    def scope_object(self, module: str, qualname: str) -> griffe.Object | None:
        """The innermost griffe object of ``module`` along ``qualname`` ("" for the module)."""
        obj = self._get(module)
        for part in qualname.split(".") if qualname else ():
            if obj is None:
                break
            child = self._final(obj.members.get(part))
            if child is None:
                break
            obj = child
        return obj

    def resolve(self, target: str, scope: griffe.Object | None) -> str | None:
        """The documented path of ``target`` written in ``scope``, or None."""
        target = target.lstrip(".")
        head, _, rest = target.partition(".")
        candidates: list[str] = []
        if target.startswith(PACKAGE + ".") or target == PACKAGE:
            candidates.append(target)
        if scope is not None:
            try:
                resolved = scope.resolve(head)
            except griffe.NameResolutionError:
                resolved = None
            if resolved is not None:
                candidates.append(f"{resolved}.{rest}" if rest else resolved)
            # An inherited member named from inside a class, or a sibling method.
            cls = scope if isinstance(scope, griffe.Class) else scope.parent
            while cls is not None and not isinstance(cls, griffe.Class):
                cls = cls.parent
            if cls is not None and head in cls.all_members:
                candidates.append(f"{cls.path}.{target}")
        for candidate in candidates:
            if candidate in self.rendered:
                return candidate
            owner_path, _, member_name = candidate.rpartition(".")
            owner = self._get(owner_path) if owner_path else None
            if isinstance(owner, griffe.Class) and owner.path in self.public:
                documented = f"{self.public[owner.path]}.{member_name}"
                if documented in self.rendered:
                    return documented  # as written: ``MockServer.add_tool`` stays MockServer's
            obj = self._get(candidate)
            if obj is not None and obj.path in self.public:
                return self.public[obj.path]
            if obj is not None and "." in candidate:
                # A member inherited by a public class: documented on the base.
                owner = self._get(candidate.rpartition(".")[0])
                if isinstance(owner, griffe.Class) and owner.path in self.public:
                    member = self._final(owner.all_members.get(candidate.rpartition(".")[2]))
                    if member is not None and member.path in self.public:
                        return self.public[member.path]
        if not target.startswith(PACKAGE):
            # Named as Sphinx would find it: the one public name ending so.
            found = {path for path in self.public.values() if path.endswith("." + target)}
            if len(found) == 1:
                return found.pop()
        return None


def _documented(obj: griffe.Object) -> bool:
    return obj.docstring is not None or obj.is_module


def _scopes(tree: ast.Module) -> list[Scope]:
    scopes: list[Scope] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                scopes.append(Scope(first, child.end_lineno or child.lineno, name))
                walk(child, name)
            else:
                walk(child, prefix)

    walk(tree, "")
    return scopes


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The 1-based line numbers inside string constants that stand alone (docstrings)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _role_text(kind: str, body: str) -> tuple[str, str]:
    """The link text and the target a role names."""
    match = EXPLICIT.match(body)
    if match:
        return match["title"], match["target"].strip().lstrip("~")
    target = body.strip()
    short = target.startswith("~")
    target = target.lstrip("~")
    text = target.rpartition(".")[2] if short else target.lstrip(".")
    if kind in ("meth", "func") and not text.endswith(")"):
        text += "()"
    return text, target


def rewrite_roles(source: str, module: str, resolver: Resolver, unresolved: list[str]) -> str:
    """Replace every Sphinx role of ``source`` (the module ``module``), rewrapping the lines
    a link made longer than the line length."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    scopes = _scopes(tree)
    lines = source.splitlines(keepends=True)
    changed: set[int] = set()
    for index, line in enumerate(lines):
        if ":`" not in line:
            continue
        inner = [s for s in scopes if s.first <= index + 1 <= s.last]
        qualname = max(inner, key=lambda s: s.first).qualname if inner else ""
        scope = resolver.scope_object(module, qualname)

        def replace(
            match: re.Match[str], scope: griffe.Object | None = scope, index: int = index
        ) -> str:
            text, target = _role_text(match["kind"], match["body"])
            path = resolver.resolve(target, scope)
            if path is None:
                if target.startswith(PACKAGE):
                    unresolved.append(f"{module}:{index + 1}: {match[0]}")
                return f"`{text}`"
            return f"[`{text}`][{path}]"

        new = ROLE.sub(replace, line)
        if new != line:
            lines[index] = new
            changed.add(index)
    return "".join(wrap_lines(lines, changed, _docstring_lines(tree)))


SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Other Parameters|Returns|Yields|Receives|Raises|Warns|"
    r"Attributes|Examples?|Notes?|Warnings?|See Also|Methods|Functions|Classes|Modules):\s*$"
)
ITEM = re.compile(r"^\s*([*+-]|\d+\.)\s")
NOT_PROSE = re.compile(r"^\s*([*+-]\s|\d+\.\s|\||```|>>>|\"\"\"|\'\'\'|#|\w[\w ]*:\s*$)")


def _opener(lines: list[str], index: int) -> str | None:
    """The nearest line before ``index`` indented less than it (its paragraph's owner)."""
    indent = _indent(lines[index])
    for back in range(index - 1, -1, -1):
        if lines[back].strip() and _indent(lines[back]) < indent:
            return lines[back]
        if not lines[back].strip() and indent == 0:
            return None
    return None


COMMENT = re.compile(r"^\s*#:? ")


def _wrap_comment(lines: list[str], index: int, prefix: str, todo: list[int]) -> bool:
    """Wrap the comment line ``index``: its last words go to the comment's next line.

    Returns:
        Whether a line was inserted after ``index``.
    """
    words = lines[index].rstrip("\n")[len(prefix) :].split(" ")
    cut = len(words)
    while cut > 1 and len(prefix + " ".join(words[:cut])) > LIMIT:
        cut -= 1
    head, tail = " ".join(words[:cut]), " ".join(words[cut:])
    if not tail:
        return False
    lines[index] = prefix + head + "\n"
    nxt = index + 1
    if nxt < len(lines) and lines[nxt].startswith(prefix) and lines[nxt][len(prefix) :].strip():
        lines[nxt] = prefix + tail + " " + lines[nxt][len(prefix) :]
        todo.insert(0, nxt)
        return False
    lines.insert(nxt, prefix + tail + "\n")
    todo[:] = [nxt] + [n + 1 if n >= nxt else n for n in todo]
    return True


def wrap_lines(lines: list[str], changed: set[int], inside: set[int]) -> list[str]:
    """Rewrap each changed docstring line longer than ``LIMIT``: its last words move to the
    start of the paragraph's next line, or to a new line under it."""
    todo = sorted(changed)
    while todo:
        index = todo.pop(0)
        line = lines[index].rstrip("\n")
        comment = COMMENT.match(line)
        if len(line) <= LIMIT or (index + 1 not in inside and not comment):
            continue
        if comment:
            if _wrap_comment(lines, index, comment.group(0), todo):
                inside = {n + 1 if n > index + 1 else n for n in inside}
            continue
        indent = _indent(line)
        words = line.split(" ")
        cut = len(words)
        while cut > indent + 1 and len(" ".join(words[:cut])) > LIMIT:
            cut -= 1
        head, tail = " ".join(words[:cut]).rstrip(), " ".join(words[cut:]).strip()
        if not tail or not head.strip():
            continue  # one long word: nothing to do
        closing = ""
        for quote in ('"""', "'''"):
            if tail.endswith(quote) and tail != quote:
                tail, closing = tail[: -len(quote)].rstrip(), quote
        # The indent of this line's continuation lines.
        owner = _opener(lines, index)
        if ITEM.match(line):
            more = len(ITEM.match(line).group(0))  # type: ignore[union-attr]
        elif owner is not None and SECTION.match(owner):
            more = indent + 4  # an Args: (or Raises:, ...) entry
        else:
            more = indent
        nxt = index + 1
        follows = (
            nxt < len(lines)
            and nxt + 1 in inside
            and lines[nxt].strip()
            and _indent(lines[nxt]) == more
            and not NOT_PROSE.match(lines[nxt])
            and not closing
        )
        lines[index] = head + "\n"
        if follows:
            rest = lines[nxt]
            lines[nxt] = " " * more + tail + " " + rest.lstrip()
        else:
            lines.insert(nxt, " " * more + tail + closing + "\n")
            inside = {n + 1 if n > nxt else n for n in inside} | {nxt + 1}
            todo = [n + 1 if n >= nxt else n for n in todo]
        todo.insert(0, nxt)
    return lines


def _is_python(code: str) -> bool:
    try:
        compile(code, "<block>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return False
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def rewrite_literal_blocks(source: str) -> str:
    """Turn each ``text::`` + indented block inside a docstring into a fenced code block."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    inside = _docstring_lines(tree)
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip()
        if i + 1 not in inside or not stripped.endswith("::") or stripped.endswith(":::"):
            out.append(line)
            i += 1
            continue
        indent = _indent(line)
        # The block: blank lines, then lines indented deeper than the paragraph.
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or j + 1 not in inside or _indent(lines[j]) <= indent:
            out.append(line)  # a "::" with no block under it: leave it for a human
            i += 1
            continue
        end = j
        while end < len(lines) and end + 1 in inside:
            if lines[end].strip() and _indent(lines[end]) <= indent:
                break
            if lines[end].rstrip().endswith(('"""', "'''")):
                break  # the docstring's closing line
            end += 1
        last = end
        while last > j and not lines[last - 1].strip():
            last -= 1
        block = textwrap.dedent("".join(lines[j:last]))
        language = "python" if _is_python(block) else "text"
        pad = " " * indent
        text = stripped[: -len("::")].rstrip()
        if text.strip() in ("Example", "Examples"):
            text = pad + "For example:"
        elif text.strip():
            text = text + ("" if text.endswith(":") else ":")
        if text.strip():
            out.extend([text + "\n", "\n"])
        out.append(f"{pad}```{language}\n")
        out.extend((pad + code if code.strip() else "") + "\n" for code in block.splitlines())
        out.append(f"{pad}```\n")
        i = last
    return "".join(out)


def rewrite_attribute_comments(source: str) -> str:
    """Turn each ``#:`` comment above an attribute into its docstring.

    The attributes are those of a module, of a class body and of ``self`` in ``__init__``.

    Sphinx reads ``#:`` comments as an attribute's documentation; mkdocstrings reads the
    string that follows the assignment, so the comment moves there.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    assignments: dict[int, int] = {}  # first line -> last line (1-based)
    for node in ast.walk(tree):
        in_init = isinstance(node, ast.FunctionDef) and node.name == "__init__"
        if isinstance(node, (ast.Module, ast.ClassDef)) or in_init:
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                    assignments[statement.lineno] = statement.end_lineno or statement.lineno
    moves: list[tuple[int, int, int, str]] = []  # comment start, assignment, its end, text
    for first_line, last_line in assignments.items():
        index = first_line - 1  # 0-based line of the assignment
        indent = _indent(lines[index])
        start = index
        while (
            start > 0
            and lines[start - 1].strip().startswith("#:")
            and _indent(lines[start - 1]) == indent
        ):
            start -= 1
        if start == index:
            continue
        text = " ".join(line.strip()[2:].strip() for line in lines[start:index])
        following = lines[last_line].strip() if last_line < len(lines) else ""
        quotes = ('"' * 3, "'" * 3)
        if not text or any(q in text for q in quotes) or "\\" in text or text.endswith('"'):
            continue
        if following.startswith(quotes):
            continue  # already documented by a string: leave the comment
        moves.append((start, index, last_line, text))
    for start, index, last_line, text in sorted(moves, reverse=True):
        pad = " " * _indent(lines[index])
        lines[last_line:last_line] = _docstring_block(pad, text)
        del lines[start:index]
    return "".join(lines)


def _docstring_block(pad: str, text: str) -> list[str]:
    quote = '"' * 3
    one = f"{pad}{quote}{text}{quote}"
    if len(one) <= LIMIT:
        return [one + "\n"]
    width = LIMIT - len(pad)
    wrapped = textwrap.wrap(quote + text, width, break_long_words=False, break_on_hyphens=False)
    if len(wrapped[-1]) + 3 <= width:
        wrapped[-1] += quote
    else:
        wrapped.append(quote)
    return [pad + line + "\n" for line in wrapped]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing, exit 1 if needed")
    args = parser.parse_args()
    resolver = Resolver()
    unresolved: list[str] = []
    changed: list[Path] = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        if GENERATED.match(path.name):
            continue
        source = path.read_text(encoding="utf-8")
        new = rewrite_roles(source, module_name(path), resolver, unresolved)
        new = rewrite_literal_blocks(new)
        new = rewrite_attribute_comments(new)
        if new != source:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for line in unresolved:
        print(f"no public page, written as code: {line}", file=sys.stderr)
    for path in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {path.relative_to(ROOT)}")
    if args.check:
        return 1 if changed else 0
    if changed:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_bridges.py")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

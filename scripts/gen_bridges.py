"""Write the public API of the blocking and asyncio sessions from ``ClientSession``'s.

``python scripts/gen_bridges.py`` reads ``ClientSession`` (``trio_mcp/_session.py``) and
the mixins of the package it inherits from (``ToolsAPI`` in ``_session_tools.py``, ...), in
method resolution order, and writes each bridge split the same way: one module per class
that defines public members. ClientSession's own go to ``trio_mcp/_blocking_api.py``
(``BlockingSession``) and ``trio_mcp/_asyncio_api.py`` (``AsyncioSession``); a
mixin ``XAPI`` of ``_session_x.py`` gets ``_blocking_api_x.py`` (``BlockingXAPI``) and
``_asyncio_api_x.py`` (``AsyncioXAPI``), bases of those two classes in the same order as the
mixins are ClientSession's. ``python scripts/gen_bridges.py --check`` only says whether
every generated module is up to date (also: none is left over from a mixin that has gone;
``tests/test_bridges_generated.py`` runs it). Add or change a public method of
``ClientSession`` or of one of its mixins (or add a mixin to its bases), run the script, and
both bridges have it.

Why a generator with checked-in output (option a) rather than a decorator that copies
signatures at class-creation time plus generated ``.pyi`` stubs (option b): mypy and
pyright never run class-creation code, so option b needs stubs generated anyway, and then
two artefacts (runtime trick and stub) must agree, IDEs jump to the stub, and ``help()``
sees what the trick made. Here the generated modules are plain Python that every tool reads
as written: IDEs, mypy, pyright (``--verifytypes``), ``help()`` and mkdocs see the real
signatures, overloads and docstrings, and a reviewer sees each API change as a diff of the
bridges too. The cost, a regeneration step, is guarded by a test.

The description of the bridges is the tables below; ``ClientSession`` and its mixins are
read with ``ast`` (no import of trio_mcp, so a broken generated file can always be
regenerated; a base class is found through the ``from .module import Name`` of the module
defining the class, and a public member belongs to the first class of the MRO defining it):

* the kind of each public ``ClientSession`` member, from its definition: an ``async def``
  is a *call* (blocking: ``Runner.call``, which blocks the calling thread; asyncio:
  ``Bridge.call``, awaited from asyncio), an ``@asynccontextmanager`` is *held* (a
  context manager, ``with`` or ``async with``, whose value ``YIELDS`` wraps), a plain
  ``def`` is *sync* (blocking: run on the Trio thread, a returned remover made callable
  from any thread; asyncio: called at once) and a ``@property`` is read through;
  ``@overload`` variants are kept; ``-> NoReturn`` stays NoReturn;
* how each argument is passed, from its parameter's annotation: callbacks the session
  awaits (``CALLBACKS``) and notification listeners (``LISTENER``) are wrapped so
  that plain functions work (blocking: in a worker thread; asyncio: awaited by asyncio),
  iterables (``ITERABLE``) become tuples, Trio-only callbacks (``TRIO_CALLBACKS``)
  and anything else are passed as they are; a callable no rule covers stops the generator;
* the prose each bridge adds to the session's docstrings (``Bridge``; ``ARGS``
  for parameters the session's docstring leaves out);
* members the hand-written base class of a bridge defines (``closed``, ``close`` for
  ``aclose``, ``aclose``) are left to it: that is where special cases live.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import re
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "trio_mcp"
WIDTH = 100

# -- the description -----------------------------------------------------------------------

#: Callback parameters run by the session as Trio awaitables: annotation in ClientSession ->
#: annotation in the bridges (widened: plain functions are accepted too).
CALLBACKS: dict[str, str] = {
    "ProgressCallback | None": "ProgressCallback | None",
    "Callable[[Any, RequestContext], Awaitable[Any]] | None": (
        "Callable[[Any, RequestContext], Any] | None"
    ),
}
#: Other ``Callable[...]`` parameters of sync methods are notification listeners.
LISTENER = re.compile(r"Callable\[")
#: Callables passed to the session as they are: Trio coroutine functions run in the Trio run.
TRIO_CALLBACKS: set[str] = {"ResultClaimHandler"}
#: What looks like a callable: one matching no rule above stops the generator.
CALLABLE = re.compile(r"Callable|Callback|Handler")
#: Iterables are turned into tuples in the calling thread / task.
ITERABLE = re.compile(r"Iterable\[[^|]*\]$")
#: The value an async context manager of ClientSession yields -> (bridge type, wrapper), per
#: bridge; any other value is handed over as it is.
YIELDS: dict[str, tuple[str, str]] = {
    "trio.MemoryReceiveChannel[Notification]": ("{prefix}Notifications", "self._stream"),
    "ToolTask": ("{prefix}ToolTask", "self._tool_task"),
}


@dataclass(frozen=True)
class Bridge:
    """How one bridge turns ClientSession's members into its own."""

    prefix: str
    module: str
    base_module: str
    base: str
    docstring: str
    renamed: dict[str, str]
    call_note: str
    hold_note: str
    sync_note: str
    callback_note: str
    listener_note: str
    remover_note: str
    property_note: str
    context_manager: str
    context_manager_doc: str


BLOCKING = Bridge(
    prefix="Blocking",
    module="_blocking_api",
    base_module="_blocking",
    base="BlockingSessionBase",
    docstring="""\
A [`ClientSession`][trio_mcp.ClientSession] for code that does not run Trio: scripts,
notebooks, threads. Open it with [`open_blocking_session()`][trio_mcp.open_blocking_session].

**The same methods as [`ClientSession`][trio_mcp.ClientSession], blocking**: each one has
the same parameters, return type and documentation, without ``await``. The async context
managers ``notifications()`` and ``listen()`` are plain context managers yielding a
blocking iterator ([`BlockingNotifications`][trio_mcp.BlockingNotifications]),
``start_tool_task()`` returns a [`BlockingToolTask`][trio_mcp.BlockingToolTask], and
``aclose()`` is [`close()`][trio_mcp.BlockingSession.close].

Any thread may call any method, also many threads at once. A method called from inside
a Trio task raises `RuntimeError` at once (it would block the Trio run); after
[`close()`][trio_mcp.BlockingSession.close] every method raises
`trio.ClosedResourceError`. Errors are those of the async API: a server that dies
mid-call fails the call with [`ConnectionClosed`][trio_mcp.ConnectionClosed]. Ctrl-C
cancels the call in progress (the server is told) and raises `KeyboardInterrupt`.""",
    renamed={"aclose": "close"},
    call_note=(
        "Blocking twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " blocks the calling thread while the "
        "session's Trio thread makes the call; Ctrl-C cancels it (the server is told) and "
        "re-raises `KeyboardInterrupt`."
    ),
    hold_note=(
        "Blocking twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " a plain context manager (``with``); "
        "entering it blocks the calling thread until the async one has been entered on the "
        "session's Trio thread, and leaving the block leaves that one."
    ),
    sync_note=(
        "Blocking twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " runs on the session's Trio thread "
        "and blocks the calling thread only for that."
    ),
    callback_note=(
        "Callbacks ({names}) may be plain functions, run in a worker thread (so they may "
        "block), or async functions, run on the session's Trio thread."
    ),
    listener_note=(
        "Callbacks ({names}) may be plain functions, run in a worker thread (so they may "
        "block), or async functions, run on the session's Trio thread."
    ),
    remover_note="The function returned may be called from any thread.",
    property_note=(
        "The same as [`ClientSession.{name}`][trio_mcp.ClientSession.{name}],"
        " read from the calling thread (the session "
        "itself is driven by its Trio thread)."
    ),
    context_manager="AbstractContextManager",
    context_manager_doc="A context manager (``with``) yielding {what}.",
)

ASYNCIO = Bridge(
    prefix="Asyncio",
    module="_asyncio_api",
    base_module="_asyncio",
    base="AsyncioSessionBase",
    docstring="""\
A [`ClientSession`][trio_mcp.ClientSession] for asyncio code. Open it with
[`open_asyncio_session()`][trio_mcp.open_asyncio_session]; Trio runs as a guest of the
asyncio loop, on the same thread.

**The same methods as [`ClientSession`][trio_mcp.ClientSession], awaited from asyncio**:
each one has the same parameters, return type and documentation. ``notifications()`` and
``listen()`` are async context managers yielding an
[`AsyncioNotifications`][trio_mcp.AsyncioNotifications], ``start_tool_task()`` returns an
[`AsyncioToolTask`][trio_mcp.AsyncioToolTask], and [`aclose()`][trio_mcp.AsyncioSession.aclose]
closes. Cancelling the asyncio task that awaits a call cancels the call (the server is
told). Callbacks (``on_progress``, notification callbacks, handlers) may be plain functions
or asyncio coroutine functions.""",
    renamed={},
    call_note=(
        "Asyncio twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " returns an asyncio awaitable; the call "
        "runs in the guest Trio run, and cancelling the awaiting asyncio task cancels it (the "
        "server is told)."
    ),
    hold_note=(
        "Asyncio twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " an async context manager for asyncio "
        "code (``async with``); the Trio one is entered and left in the guest Trio run."
    ),
    sync_note=(
        "Asyncio twin of [`ClientSession.{name}()`][trio_mcp.ClientSession.{name}]:"
        " a plain (not async) method, run at "
        "once on the asyncio thread, which also runs the guest Trio run."
    ),
    callback_note=(
        "Callbacks ({names}) may be plain functions or asyncio coroutine functions (awaited "
        "by asyncio)."
    ),
    listener_note=(
        "Callbacks ({names}) may be plain functions (called on the asyncio thread: keep "
        "them quick) or asyncio coroutine functions (run as asyncio tasks)."
    ),
    remover_note="",
    property_note=(
        "The same as [`ClientSession.{name}`][trio_mcp.ClientSession.{name}] (driven by the "
        "guest Trio run)."
    ),
    context_manager="AbstractAsyncContextManager",
    context_manager_doc="An async context manager (``async with``) yielding {what}.",
)

BRIDGES = (BLOCKING, ASYNCIO)

# -- reading ClientSession -----------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "self", "pos", "star", "kw"
    annotation: str | None
    default: str | None


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    returns: str


@dataclass
class Member:
    name: str
    kind: str  # "call", "hold", "sync", "property"
    signature: Signature
    docstring: str
    overloads: list[Signature] = field(default_factory=lambda: list[Signature]())


@functools.cache
def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def _segment(source: str, node: ast.expr | None) -> str | None:
    """The source text of ``node`` (an annotation or a default), on one line."""
    if node is None:
        return None
    lines = _lines(source)
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset
    if first == last:
        text = lines[first].encode()[start:end].decode()
    else:
        parts = [lines[first].encode()[start:].decode(), *lines[first + 1 : last]]
        text = "".join([*parts, lines[last].encode()[:end].decode()])
    return " ".join(text.split())


def _signature(source: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    args = func.args
    params: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    if args.posonlyargs:
        raise SystemExit(f"{func.name}: positional-only parameters are not supported")
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "self" if index == 0 else "pos"
        params.append(
            Param(arg.arg, kind, _segment(source, arg.annotation), _segment(source, default))
        )
    if args.vararg is not None:
        params.append(
            Param(args.vararg.arg, "star", _segment(source, args.vararg.annotation), None)
        )
    elif args.kwonlyargs:
        params.append(Param("", "bare_star", None, None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(
            Param(arg.arg, "kw", _segment(source, arg.annotation), _segment(source, default))
        )
    if args.kwarg is not None:
        raise SystemExit(f"{func.name}: **kwargs parameters are not supported")
    returns = _segment(source, func.returns)
    if returns is None:
        raise SystemExit(f"{func.name}: no return annotation")
    return Signature(tuple(params), returns)


def _decorators(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {ast.unparse(node) for node in func.decorator_list}


def read_members(source: str, class_name: str = "ClientSession") -> list[Member]:
    """The public members ``class_name`` defines in ``source``, in the order of the source."""
    tree = ast.parse(source)
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    members: dict[str, Member] = {}
    pending: dict[str, list[Signature]] = {}
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.name.startswith("_"):
            continue
        decorators = _decorators(node)
        signature = _signature(source, node)
        if "overload" in decorators:
            pending.setdefault(node.name, []).append(signature)
            continue
        if decorators - {"property", "asynccontextmanager"}:
            raise SystemExit(f"{class_name}.{node.name}: unknown decorators {decorators}")
        if "property" in decorators:
            kind = "property"
        elif "asynccontextmanager" in decorators:
            kind = "hold"
        elif isinstance(node, ast.AsyncFunctionDef):
            kind = "call"
        else:
            kind = "sync"
        docstring = ast.get_docstring(node, clean=True)
        if not docstring:
            raise SystemExit(f"{class_name}.{node.name} has no docstring")
        members[node.name] = Member(
            node.name, kind, signature, docstring, pending.pop(node.name, [])
        )
    return list(members.values())


@dataclass(frozen=True)
class Area:
    """A class of ClientSession's MRO in the package: ClientSession itself or a mixin."""

    module: str  # e.g. "_session_tools"
    name: str  # e.g. "ToolsAPI"
    source: str
    members: tuple[Member, ...]


def _source(module: str, sources: Mapping[str, str]) -> str:
    name = f"{module}.py"
    return sources[name] if name in sources else (PACKAGE / name).read_text()


def _bases(module: str, name: str, sources: Mapping[str, str]) -> list[tuple[str, str]]:
    """The bases of class ``name`` in ``module`` that are classes of the package (by ast)."""
    tree = ast.parse(_source(module, sources))
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    imports, defined = read_imports(_source(module, sources))
    found: list[tuple[str, str]] = []
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            continue  # Generic[...] and the like: not ours
        if base.id in defined:
            found.append((module, base.id))
        elif base.id in imports:
            where, text, _ = imports[base.id]
            if where.startswith(".") and not where.startswith("..") and where != ".":
                found.append((where[1:], text.split(" as ")[0]))
    return found


def session_mro(sources: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """ClientSession's classes in the package, in method resolution order (C3, by ast)."""
    sources = sources or {}

    def linearize(cls: tuple[str, str]) -> list[tuple[str, str]]:
        bases = _bases(*cls, sources)
        sequences = [linearize(base) for base in bases] + [list(bases)]
        result = [cls]
        while any(sequences):
            sequences = [seq for seq in sequences if seq]
            for seq in sequences:
                head = seq[0]
                if not any(head in other[1:] for other in sequences):
                    break
            else:
                raise SystemExit(f"no consistent method resolution order for {cls}")
            result.append(head)
            sequences = [seq[1:] if seq[0] == head else seq for seq in sequences]
        return result

    return linearize(("_session", "ClientSession"))


def read_areas(sources: Mapping[str, str] | None = None) -> list[Area]:
    """ClientSession and its mixins that define public members, in MRO order.

    Each public member belongs to the first class of the MRO that defines it, as for Python.
    ``sources`` replaces the text of package modules by file name (``{"_session.py": ...}``).
    """
    sources = sources or {}
    seen: set[str] = set()
    areas: list[Area] = []
    for module, name in session_mro(sources):
        source = _source(module, sources)
        members = [m for m in read_members(source, name) if m.name not in seen]
        seen.update(m.name for m in members)
        if members or name == "ClientSession":
            areas.append(Area(module, name, source, tuple(members)))
    return areas


def read_imports(source: str) -> tuple[dict[str, tuple[str, str, bool]], set[str]]:
    """Where a module gets each name: name -> (module, import text, type-checking only).

    Also returns the names the module defines at module level.
    """
    tree = ast.parse(source)
    imports: dict[str, tuple[str, str, bool]] = {}
    defined: set[str] = set()

    def visit(body: list[ast.stmt], checking: bool) -> None:
        for node in body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                visit(node.body, True)
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    text = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
                    imports[alias.asname or alias.name] = (module, text, checking)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    imports[alias.asname or alias.name] = ("", alias.name, checking)
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign):
                defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                defined.add(node.target.id)

    visit(tree.body, False)
    return imports, defined


def read_base_members(source: str, base: str, session: str) -> set[str]:
    """The names the hand-written base class of a bridge defines (also through SessionView)."""
    tree = ast.parse(source)
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == base)
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    if any(ast.unparse(b) == "SessionView" for b in cls.bases):
        view_tree = ast.parse(session)
        (view,) = (
            n for n in view_tree.body if isinstance(n, ast.ClassDef) and n.name == "SessionView"
        )
        names |= {n.name for n in view.body if isinstance(n, ast.FunctionDef)}
    return names


# -- writing a bridge ----------------------------------------------------------------------


def _param_kind(param: Param, member: Member) -> str:
    annotation = param.annotation or ""
    if annotation in CALLBACKS:
        return "callback"
    if member.kind == "sync" and LISTENER.match(annotation):
        return "listener"
    if ITERABLE.match(annotation):
        return "iterable"
    if annotation not in TRIO_CALLBACKS and CALLABLE.search(annotation):
        raise SystemExit(
            f"ClientSession.{member.name}({param.name}: {annotation}): how do the bridges pass "
            "this callable? Add its annotation to CALLBACKS (wrapped so plain functions work) "
            "or TRIO_CALLBACKS (passed as it is) in scripts/gen_bridges.py"
        )
    return "plain"


def _bridge_annotation(param: Param) -> str | None:
    if param.annotation is None:
        return None
    return CALLBACKS.get(param.annotation, param.annotation)


def _yields(bridge: Bridge, returns: str) -> tuple[str, str]:
    match = re.fullmatch(r"AsyncGenerator\[(.*), None\]", returns)
    if match is None:
        raise SystemExit(f"an async context manager returning {returns!r}")
    value = match.group(1)
    if value in YIELDS:
        kind, wrap = YIELDS[value]
        return kind.format(prefix=bridge.prefix), wrap
    if "trio." in value:
        raise SystemExit(
            f"an async context manager of ClientSession yields {value}: a Trio object the "
            "bridges' users cannot use; add a wrapper to YIELDS in scripts/gen_bridges.py"
        )
    return value, "self._same"


def _returns(bridge: Bridge, member: Member, sig: Signature) -> str:
    if member.kind == "hold":
        return f"{bridge.context_manager}[{_yields(bridge, sig.returns)[0]}]"
    return sig.returns


def _render_def(bridge: Bridge, member: Member, sig: Signature, name: str) -> list[str]:
    is_async = bridge is ASYNCIO and member.kind == "call"
    head = f"    {'async ' if is_async else ''}def {name}("
    if len(sig.params) == 1:  # self only
        return [f"{head}self) -> {_returns(bridge, member, sig)}:"]
    lines = [head]
    for param in sig.params:
        if param.kind == "self":
            lines.append("        self,")
        elif param.kind == "bare_star":
            lines.append("        *,")
        else:
            star = "*" if param.kind == "star" else ""
            annotation = _bridge_annotation(param)
            text = f"{star}{param.name}" + (f": {annotation}" if annotation else "")
            if param.default is not None:
                text += f" = {param.default}" if annotation else f"={param.default}"
            lines.append(f"        {text},")
    lines.append(f"    ) -> {_returns(bridge, member, sig)}:")
    return lines


def _argument(bridge: Bridge, member: Member, param: Param) -> str:
    kind = _param_kind(param, member)
    value = param.name
    if kind == "callback":
        value = f"self._callback({value})"
    elif kind == "listener":
        value = f"self._callback({value})" if bridge is BLOCKING else f"self._deliver({value})"
    elif kind == "iterable":
        value = f"tuple({value})"
    if param.kind == "star":
        return f"*{value}"
    if param.kind == "kw":
        return f"{param.name}={value}"
    return value


def _arguments(bridge: Bridge, member: Member) -> list[str]:
    return [
        _argument(bridge, member, p)
        for p in member.signature.params
        if p.kind not in ("self", "bare_star")
    ]


def _call_lines(head: str, args: list[str], indent: str, tail: str = "") -> list[str]:
    if not args:  # (as ruff formats a call without arguments)
        return [f"{indent}{head}(){tail}"]
    lines = [f"{indent}{head}("]
    lines += [f"{indent}    {arg}," for arg in args]
    lines.append(f"{indent}){tail}")
    return lines


def _body(bridge: Bridge, member: Member) -> list[str]:
    name, sig = member.name, member.signature
    args = _arguments(bridge, member)
    ind = "        "
    if member.kind == "property":
        return [f"{ind}return self._session.{name}"]
    if member.kind == "call":
        target = f"self._session.{name}"
        if bridge is BLOCKING:
            head, first = "self._runner.call", [f'"{name}()"', target]
        else:
            head, first = "await self._bridge.call", [target]
        if sig.returns == "None":
            return _call_lines(head, first + args, ind)
        if sig.returns == "NoReturn":
            return [
                *_call_lines(head, first + args, ind),
                f'{ind}raise AssertionError("unreachable: {name}() returns only by raising")',
            ]
        return _call_lines(f"return {head}", first + args, ind)
    if member.kind == "hold":
        wrap = _yields(bridge, sig.returns)[1]
        opener = _call_lines("partial", [f"self._session.{name}", *args], ind + "    ", ",")
        return [
            f"{ind}return self._hold(",
            f'{ind}    "{name}()",',
            *opener,
            f"{ind}    {wrap},",
            f"{ind})",
        ]
    # sync
    if bridge is BLOCKING:
        target = [f'"{name}()"', f"self._session.{name}"]
        if sig.returns == "Callable[[], None]":
            return [
                f"{ind}return self._remover(",
                *_call_lines("self._run_sync", target + args, ind + "    "),
                f"{ind})",
            ]
        returns = "" if sig.returns == "None" else "return "
        return _call_lines(f"{returns}self._run_sync", target + args, ind)
    returns = "" if sig.returns == "None" else "return "
    return [
        f"{ind}self._bridge.check()",
        *_call_lines(f"{returns}self._session.{name}", args, ind),
    ]


#: What an ``Args:`` entry says when ClientSession's docstring leaves a parameter out.
ARGS: dict[str, str] = {
    "timeout": "Seconds before `trio.TooSlowError`.",
    "cache": "Use a cached result while the server's ``ttlMs`` hint says it is fresh.",
}

SECTION = re.compile(r"^(Args|Returns|Yields|Raises|Example|Examples|Note|Notes):$")


def _docstring(bridge: Bridge, member: Member) -> list[str]:
    lines = member.docstring.splitlines()
    summary: list[str] = []
    while lines and lines[0].strip():
        summary.append(lines.pop(0))
    sections: list[list[str]] = []
    for line in lines:
        if SECTION.match(line):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    notes = {
        "call": bridge.call_note,
        "hold": bridge.hold_note,
        "sync": bridge.sync_note,
        "property": bridge.property_note,
    }[member.kind].format(name=member.name)
    for kind, note in (("callback", bridge.callback_note), ("listener", bridge.listener_note)):
        names = [f"``{p.name}``" for p in member.signature.params if _param_kind(p, member) == kind]
        if names:
            notes += " " + note.format(names=", ".join(names))
    if member.signature.returns == "Callable[[], None]" and bridge.remover_note:
        notes += " " + bridge.remover_note
    out = [
        *summary,
        "",
        *textwrap.wrap(notes, WIDTH - 12 - 8, break_long_words=False, break_on_hyphens=False),
    ]
    documented = {
        line.split(":")[0].strip().lstrip("*")
        for line in lines
        if line.startswith("    ") and line[4:5] != " "
    }
    missing: list[str] = []
    for param in member.signature.params:
        if param.kind in ("pos", "star", "kw") and param.name not in documented:
            if param.name not in ARGS:
                raise SystemExit(f"ClientSession.{member.name}: document {param.name!r} in Args")
            missing.append(f"    {param.name}: {ARGS[param.name]}")
    if missing and not any(section[0] == "Args:" for section in sections):
        sections.insert(0, ["Args:"])
    for section in sections:
        while section and not section[-1].strip():
            section.pop()
        if section[0] == "Args:":
            section += missing
            missing = []
        if section[0] == "Yields:":
            what = _yields(bridge, member.signature.returns)[0]
            what = (
                f"the [`{what}`][trio_mcp.{what}]" if re.fullmatch(r"\w+", what) else f"``{what}``"
            )
            doc = bridge.context_manager_doc.format(what=what)
            section = [
                "Returns:",
                *(
                    "    " + line
                    for line in textwrap.wrap(doc, WIDTH - 12 - 4, break_long_words=False)
                ),
            ]
        out += ["", *section]
    indent = "        "
    text = [f'{indent}"""{out[0]}']
    text += [f"{indent}{line}" if line.strip() else "" for line in out[1:]]
    text.append(f'{indent}"""')
    return text


def _names(annotation: str) -> set[str]:
    tree = ast.parse(annotation, mode="eval")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
    return names


def _order(name: str) -> tuple[int, str]:
    """ruff's (isort's) order-by-type: CONSTANTS, Classes, then everything else."""
    bare = name.split(" as ")[0]
    if bare.isupper() and len(bare) > 1:
        return (0, bare)
    if bare[:1].isupper():
        return (1, bare)
    return (2, bare)


def _import_lines(module: str, names: set[str], indent: str = "") -> list[str]:
    ordered = sorted(names, key=_order)
    line = f"{indent}from {module} import {', '.join(ordered)}"
    if len(line) <= WIDTH:
        return [line]
    return [
        f"{indent}from {module} import (",
        *(f"{indent}    {n}," for n in ordered),
        f"{indent})",
    ]


def area_module(bridge: Bridge, area: Area) -> str:
    """The generated module of ``area``: ``_blocking_api`` for ClientSession's own members,
    ``_blocking_api_tools`` for ``_session_tools``'s mixin, and so on."""
    if area.name == "ClientSession":
        return bridge.module
    suffix = area.module.removeprefix("_session")
    return f"{bridge.module}{suffix if suffix.startswith('_') else '_' + suffix}"


def area_class(bridge: Bridge, area: Area) -> str:
    """The generated class of ``area``: ``BlockingSession``, ``BlockingToolsAPI``, ..."""
    return f"{bridge.prefix}Session" if area.name == "ClientSession" else bridge.prefix + area.name


def _render_area(bridge: Bridge, area: Area, mixins: list[Area], base_members: set[str]) -> str:
    """The text of one generated module: the bridge's twin of one area of ClientSession."""
    imports, defined = read_imports(area.source)
    main = area.name == "ClientSession"

    body: list[str] = []
    used: set[str] = set()
    runtime: dict[str, set[str]] = {}
    for member in area.members:
        name = bridge.renamed.get(member.name, member.name)
        if name in base_members:
            continue
        signatures = [*member.overloads, member.signature]
        for sig in signatures:
            for param in sig.params:
                annotation = _bridge_annotation(param)
                if annotation:
                    used |= _names(annotation)
            used |= _names(_returns(bridge, member, sig))
        for sig in member.overloads:
            runtime.setdefault("typing", set()).add("overload")
            body += ["", "    @overload", *_render_def(bridge, member, sig, name)]
            body[-1] += " ..."
        body.append("")
        if member.kind == "property":
            body.append("    @property")
        body += _render_def(bridge, member, member.signature, name)
        body += _docstring(bridge, member)
        body += _body(bridge, member)
        if member.kind == "hold":
            runtime.setdefault("functools", set()).add("partial")

    own = {"ProgressCallback", f"{bridge.prefix}Notifications", f"{bridge.prefix}ToolTask"}
    local: dict[str, set[str]] = {}
    if main:
        for mixin in mixins:
            local[f".{area_module(bridge, mixin)}"] = {area_class(bridge, mixin)}
        if not mixins:
            local[f".{bridge.base_module}"] = {bridge.base}
    else:
        local[f".{bridge.base_module}"] = {bridge.base}
    checking: dict[str, set[str]] = {}
    plain: set[str] = set()
    for name in sorted(used):
        if name in own:
            local.setdefault(f".{bridge.base_module}", set()).add(name)
        elif name in {"AbstractContextManager", "AbstractAsyncContextManager"}:
            runtime.setdefault("contextlib", set()).add(name)
        elif name in imports:
            module, text, type_checking = imports[name]
            if not module:
                plain.add(text)
            elif type_checking:
                checking.setdefault(module, set()).add(text)
            elif module.startswith("."):
                local.setdefault(module, set()).add(text)
            else:
                runtime.setdefault(module, set()).add(text)
        elif name in defined:
            local.setdefault(f".{area.module}", set()).add(name)
        elif not hasattr(builtins, name):
            raise SystemExit(f"{area_module(bridge, area)}: where does {name!r} come from?")
    if checking:
        runtime.setdefault("typing", set()).add("TYPE_CHECKING")

    stdlib = {m: n for m, n in runtime.items() if m not in ("trio", "msgspec", "outcome")}
    third = {m: n for m, n in runtime.items() if m in ("trio", "msgspec", "outcome")}
    cls = area_class(bridge, area)
    if main:
        about = [
            f'"""The public methods of ``{cls}``, written from ClientSession\'s.',
            "",
            f"The hand-written parts (the class's base, ``{bridge.base}``, and how calls",
            f"cross into Trio) are in ``trio_mcp/{bridge.base_module}.py``; the twins of the",
            "methods of ClientSession's mixins are in the generated modules named after them.",
            '"""',
        ]
    else:
        about = [
            f'"""The twins of ``{area.name}``\'s methods (``trio_mcp/{area.module}.py``) in',
            f"``{bridge.prefix}Session``, written from them.",
            "",
            f"The hand-written parts (the base, ``{bridge.base}``, and how calls cross into",
            f"Trio) are in ``trio_mcp/{bridge.base_module}.py``.",
            '"""',
        ]
    head = [
        f"{GENERATED} from trio_mcp/{area.module}.py: do not edit.",
        f"# Change {area.name} (or the description in scripts/gen_bridges.py) and run",
        "# `python scripts/gen_bridges.py`; tests/test_bridges_generated.py fails while stale.",
        *about,
        "",
        "from __future__ import annotations",
        "",
    ]
    # isort: "import x" before "from x import", modules alphabetically
    for module in sorted(stdlib):
        head += _import_lines(module, stdlib[module])
    if stdlib:
        head.append("")
    if third or plain & {"trio", "msgspec"}:
        head += [f"import {name}" for name in sorted(plain)]
        for module in sorted(third):
            head += _import_lines(module, third[module])
        head.append("")
    for module in sorted(local, key=lambda m: (m != ".", m)):
        head += _import_lines(module, local[module])
    if checking:
        head += ["", "if TYPE_CHECKING:"]
        for module in sorted(checking):
            head += _import_lines(module, checking[module], "    ")
    if main:
        bases = ", ".join(area_class(bridge, mixin) for mixin in mixins) or bridge.base
        docstring = f'"""{bridge.docstring}\n"""'
    else:
        bases = bridge.base
        docstring = (
            f'"""The twins of ``{area.name}``\'s methods: a base of\n'
            f'[`{bridge.prefix}Session`][trio_mcp.{bridge.prefix}Session].\n"""'
        )
    head += [
        "",
        f'__all__ = ["{cls}"]',
        "",
        "",
        f"class {cls}({bases}):",
        *(f"    {line}" if line else "" for line in docstring.splitlines()),
    ]
    if not main:
        head += ["", "    __slots__ = ()"]
    return "\n".join(head + body) + "\n"


def render(bridge: Bridge, sources: Mapping[str, str] | None = None) -> dict[str, str]:
    """The generated modules of ``bridge``: file name -> text.

    Read from ClientSession and its mixins in the package, with ``sources`` replacing the
    text of some of its modules by file name (``{"_session.py": ...}``).
    """
    sources = sources or {}
    base_members = read_base_members(
        _source(bridge.base_module, sources), bridge.base, _source("_session", sources)
    )
    areas = read_areas(sources)
    mixins = [
        area
        for area in areas
        if area.name != "ClientSession"
        and any(bridge.renamed.get(m.name, m.name) not in base_members for m in area.members)
    ]
    texts: dict[str, str] = {}
    for area in areas:
        if area.name != "ClientSession" and area not in mixins:
            continue
        texts[f"{area_module(bridge, area)}.py"] = _render_area(bridge, area, mixins, base_members)
    return texts


#: The first line of every generated module.
GENERATED = "# Generated by scripts/gen_bridges.py"


def generated_files(bridge: Bridge) -> set[str]:
    """The generated files of ``bridge`` now in the package (also ones no longer generated).

    Only files that say they are generated: a hand-written ``_blocking_api_x.py`` is never
    taken for a left-over.
    """
    paths = [PACKAGE / f"{bridge.module}.py", *PACKAGE.glob(f"{bridge.module}_*.py")]
    return {path.name for path in paths if path.exists() and path.read_text().startswith(GENERATED)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    options = parser.parse_args(argv)
    stale: list[Path] = []
    removed: list[Path] = []
    for bridge in BRIDGES:
        texts = render(bridge)
        for name in sorted(generated_files(bridge) - set(texts)):
            path = PACKAGE / name  # a mixin that has gone: its bridge part goes too
            stale.append(path.relative_to(ROOT))
            if not options.check:
                path.unlink()
                removed.append(path.relative_to(ROOT))
        for name, text in texts.items():
            path = PACKAGE / name
            if path.exists() and path.read_text() == text:
                continue
            stale.append(path.relative_to(ROOT))
            if not options.check:
                path.write_text(text)
    if options.check and stale:
        print(f"stale: {', '.join(map(str, stale))}; run python scripts/gen_bridges.py")
        return 1
    for path in stale:
        print(f"{'removed' if path in removed else 'wrote'} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

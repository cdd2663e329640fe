"""Make each public name show where it is documented: ``trio_mcp.auth.OAuth``, no private module.

Each public namespace (``trio_mcp``, ``trio_mcp.auth``, ``trio_mcp.agent``, ...) calls
`publish()` on the names it exports, so ``__module__`` (shown in reprs, tracebacks and
``help()``) names a public module that lists the name. A name exported from a feature
namespace and re-exported from ``trio_mcp`` shows the namespace, as protocol types show
``trio_mcp.types``: only a name still in a private module is changed, and ``trio_mcp``
publishes its own names after it imported every namespace.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable
from typing import Any, Final

import msgspec

NAMESPACES: Final = (
    "trio_mcp.types",
    "trio_mcp.transports",
    "trio_mcp.handlers",
    "trio_mcp.auth",
    "trio_mcp.tasks",
    "trio_mcp.validation",
    "trio_mcp.urls",
    "trio_mcp.groups",
    "trio_mcp.config",
    "trio_mcp.agent",
    "trio_mcp.skills",
    "trio_mcp.testing",
    "trio_mcp",
)
"""The public namespaces, in the order a name's documented place is chosen: a name a feature
namespace exports is documented there (as `publish()` makes its ``__module__`` say), even when
``trio_mcp`` re-exports it too. The docs tooling reads this list."""


def publish(module: str, namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` of the classes and functions ``names`` of ``namespace`` to ``module``.

    Args:
        module: The public module's name, e.g. ``"trio_mcp.auth"``.
        namespace: The public module's globals.
        names: The names to publish (those not yet loaded are skipped).
    """
    for name in names:
        value = namespace.get(name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # a type alias (Callable[...], a union) or a constant
        if not any(part.startswith("_") for part in value.__module__.split(".")):
            continue  # already public (trio_mcp.types.Tool) or published by another namespace
        if inspect.isclass(value) and issubclass(value, msgspec.Struct):
            _resolve_annotations(value)
        value.__module__ = module


def load_lazily(module: str, namespace: dict[str, Any], lazy: dict[str, str], name: str) -> Any:
    """A namespace's module ``__getattr__``: import the private module of ``name`` on first use.

    For names whose module would load an optional or heavy dependency (httpx for OAuth and
    the HTTP parameters): every name of that module listed in ``lazy`` is published and
    bound in ``namespace`` at once, so the next access is a plain attribute.

    Args:
        module: The public module's name, e.g. ``"trio_mcp.auth"``.
        namespace: The public module's globals.
        lazy: Name -> the private module (relative to ``trio_mcp``) that defines it.
        name: The name asked for.

    Raises:
        AttributeError: ``name`` is not one of ``lazy``.
    """
    where = lazy.get(name)
    if where is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    import importlib  # (import cost: the module is loaded only when a name is used)

    loaded = vars(importlib.import_module(where, "trio_mcp"))
    names = [other for other, place in lazy.items() if place == where]
    publish(module, loaded, names)
    namespace.update({other: loaded[other] for other in names})
    return loaded[name]


def _resolve_annotations(cls: type[msgspec.Struct]) -> None:
    # msgspec resolves a Struct's string annotations (``from __future__ import annotations``)
    # in the module named by ``__module__``: evaluate them in their own module first, so
    # decoders built later still find every field's type.
    own = inspect.get_annotations(cls)
    if not any(isinstance(value, str) for value in own.values()):
        return
    hints = typing.get_type_hints(cls, include_extras=True)  # each class's own module
    cls.__annotations__ = {name: hints.get(name, value) for name, value in own.items()}

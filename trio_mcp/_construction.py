"""Public classes only the library builds: calling them raises, naming how to get one."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

__all__ = ["NoPublicConstructor"]

T = TypeVar("T")


class NoPublicConstructor(type):
    """Metaclass: ``Cls(...)`` raises `TypeError`; the library uses ``Cls._create``.

    The message names what to call instead: the class's ``_open_with`` attribute.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        how = getattr(cls, "_open_with", "the function that opens it")
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} has no public constructor: use {how}")

    def _create(cls: type[T], *args: Any, **kwargs: Any) -> T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc, no-any-return]

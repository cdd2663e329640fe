"""Roots: the directories and files a client lets a server operate on (``roots/list``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from ._base import RequestParams, Result, _Wire


class Root(_Wire, kw_only=True):
    """A directory or file the server may operate on."""

    uri: str
    name: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListRootsResult(Result, kw_only=True):
    """The client's answer to ``roots/list``."""

    roots: list[Root]


class ListRootsRequest(_Wire, kw_only=True, tag_field="method", tag="roots/list"):
    """A roots input request inside an [`InputRequiredResult`][trio_mcp.types.InputRequiredResult]
    (2026-07-28)."""

    method: ClassVar[Literal["roots/list"]] = "roots/list"
    params: RequestParams | UnsetType = UNSET

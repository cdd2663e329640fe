"""MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``): the typed ``_meta.ui`` of tools and
resources, so a host gets what it needs to render an app (trio_mcp renders nothing).

A tool names its app's ``ui://`` resource in ``_meta.ui.resourceUri``; the resource (its
listing entry or its contents) says in ``_meta.ui`` how the app may run: the
Content-Security-Policy domains, the sandbox permissions, a dedicated domain, a border.
A client that can render apps advertises the extension with the MIME types it renders
(:data:`APPS_EXTENSION`, :data:`APP_MIME_TYPE`); ``ui://`` resources are read like any
other. :func:`ui_meta` decodes the ``_meta.ui`` object of a tool or resource.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from .._exceptions import ProtocolError
from ._base import _Wire

APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The MCP Apps extension id, advertised under ``capabilities.extensions``."""

APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of an app's HTML resource (``ui://...``)."""

_T = TypeVar("_T", bound=_Wire)


class UIToolMeta(_Wire, kw_only=True):
    """A tool's ``_meta.ui``: the app that shows its results.

    Attributes:
        resource_uri: The ``ui://`` resource of the app (read it with ``read_resource``).
        visibility: Who may call the tool: ``"model"``, ``"app"`` (both when absent).
    """

    resource_uri: str | UnsetType = UNSET
    visibility: list[str] | UnsetType = UNSET


class UIResourceCsp(_Wire, kw_only=True):
    """The origins an app may reach, for the host's Content-Security-Policy.

    Attributes:
        connect_domains: Origins for fetch, XHR and WebSocket (``connect-src``).
        resource_domains: Origins for scripts, styles, images, fonts, media.
        frame_domains: Origins of nested frames (``frame-src``).
        base_uri_domains: Origins allowed as the document's base URI.
    """

    connect_domains: list[str] | UnsetType = UNSET
    resource_domains: list[str] | UnsetType = UNSET
    frame_domains: list[str] | UnsetType = UNSET
    base_uri_domains: list[str] | UnsetType = UNSET


class UIResourcePermissions(_Wire, kw_only=True):
    """The sandbox permissions an app asks for (each present field: asked for).

    Attributes:
        camera: The camera.
        microphone: The microphone.
        geolocation: The location.
        clipboard_write: Writing to the clipboard.
    """

    camera: dict[str, Any] | UnsetType = UNSET
    microphone: dict[str, Any] | UnsetType = UNSET
    geolocation: dict[str, Any] | UnsetType = UNSET
    clipboard_write: dict[str, Any] | UnsetType = UNSET


class UIResourceMeta(_Wire, kw_only=True):
    """A ``ui://`` resource's ``_meta.ui``: how the host may run the app.

    Attributes:
        csp: The origins the app may reach (none beyond its own when absent).
        permissions: The sandbox permissions it asks for.
        domain: A dedicated origin to serve it from.
        prefers_border: Whether the host should draw a border around it.
    """

    csp: UIResourceCsp | UnsetType = UNSET
    permissions: UIResourcePermissions | UnsetType = UNSET
    domain: str | UnsetType = UNSET
    prefers_border: bool | UnsetType = UNSET


def ui_meta(meta: Any, tp: type[_T]) -> _T | None:
    """Decode the ``ui`` object of a ``_meta`` as ``tp`` (None when there is none).

    A tool's deprecated flat ``_meta["ui/resourceUri"]`` is read too.

    Args:
        meta: The ``_meta`` of a tool, resource or resource contents (``UNSET`` or a dict).
        tp: [`UIToolMeta`][trio_mcp.types.UIToolMeta] or
            [`UIResourceMeta`][trio_mcp.types.UIResourceMeta].

    Returns:
        The typed ``_meta.ui``, or None.

    Raises:
        ProtocolError: ``_meta.ui`` is there but not of that shape.
    """
    if not isinstance(meta, dict):
        return None
    mapping: dict[str, Any] = meta  # pyright: ignore[reportUnknownVariableType]
    value = mapping.get("ui")
    flat = mapping.get("ui/resourceUri")
    if value is None and tp is UIToolMeta and isinstance(flat, str):
        value = {"resourceUri": flat}
    if value is None:
        return None
    try:
        return msgspec.convert(value, tp)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"the server's _meta.ui is not a valid {tp.__name__}: {exc}") from exc

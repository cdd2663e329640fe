"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): the typed ``_meta.ui`` of tools, resources.

A server pairs a tool with an HTML app: the tool names the app's ``ui://`` resource in
``_meta.ui.resourceUri``, and the resource (its listing and its contents) says in its own
``_meta.ui`` what the sandboxed page may load (CSP domains), which browser permissions it
asks for, its dedicated origin and whether it prefers a border. The client renders nothing:
these types give a host what it needs to render.

``_meta`` stays the plain dict the server sent (``Tool.meta``); ``Tool.ui``,
``Resource.ui`` and ``ResourceContents.ui`` read its ``ui`` entry as these types, and give
None (with a debug log) when the server's ``ui`` entry is malformed: a bad hint never fails
a listing. Fields this library does not know stay in ``meta["ui"]``.
"""

from __future__ import annotations

import logging
from typing import Any, Final, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from ._base import _Wire

logger = logging.getLogger("trio_mcp")

_T = TypeVar("_T", bound=_Wire)

APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The extension id of MCP Apps, advertised under ``capabilities.extensions``."""

APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of an MCP App's HTML (a ``ui://`` resource's ``mimeType``)."""


class UIResourceCsp(_Wire, kw_only=True):
    """The origins an app's page may reach, for the host's ``Content-Security-Policy``.

    Attributes:
        connect_domains: Origins for fetch, XHR and WebSocket (``connect-src``).
        resource_domains: Origins for scripts, images, styles, fonts, media.
        frame_domains: Origins for nested frames (``frame-src``).
        base_uri_domains: Origins allowed as the document's base URI (``base-uri``).
    """

    connect_domains: list[str] | UnsetType = UNSET
    resource_domains: list[str] | UnsetType = UNSET
    frame_domains: list[str] | UnsetType = UNSET
    base_uri_domains: list[str] | UnsetType = UNSET


class UIResourcePermissions(_Wire, kw_only=True):
    """The browser permissions an app's page asks for (each present as ``{}`` when asked).

    Attributes:
        camera: Camera access.
        microphone: Microphone access.
        geolocation: Geolocation access.
        clipboard_write: Writing to the clipboard.
    """

    camera: dict[str, Any] | UnsetType = UNSET
    microphone: dict[str, Any] | UnsetType = UNSET
    geolocation: dict[str, Any] | UnsetType = UNSET
    clipboard_write: dict[str, Any] | UnsetType = UNSET


class UIToolMeta(_Wire, kw_only=True):
    """A tool's ``_meta.ui``: the app that shows its results, and who may call it.

    Attributes:
        resource_uri: The ``ui://`` resource holding the app's HTML.
        visibility: Who the tool is meant for: ``"model"``, ``"app"`` or both (unset:
            both). An audience hint from the server, not access control.
    """

    resource_uri: str | UnsetType = UNSET
    visibility: list[str] | UnsetType = UNSET

    @property
    def model_visible(self) -> bool:
        """Whether the tool is meant to be offered to the model (not an app-only tool)."""
        return isinstance(self.visibility, UnsetType) or "model" in self.visibility


class UIResourceMeta(_Wire, kw_only=True):
    """A ``ui://`` resource's ``_meta.ui``: how a host should sandbox the app's page.

    Attributes:
        csp: The origins the page may reach.
        permissions: The browser permissions it asks for.
        domain: A dedicated origin the host should serve the page from.
        prefers_border: Whether the app prefers a visible border around it.
    """

    csp: UIResourceCsp | UnsetType = UNSET
    permissions: UIResourcePermissions | UnsetType = UNSET
    domain: str | UnsetType = UNSET
    prefers_border: bool | UnsetType = UNSET


def ui_meta(meta: Any, tp: type[_T]) -> _T | None:
    """Decode the ``ui`` object of a ``_meta`` as ``tp``; None when absent or malformed.

    A malformed one (not of the extension's shape) is logged at DEBUG on the ``trio_mcp``
    logger: a bad hint from a server never fails a listing. A tool's deprecated flat
    ``_meta["ui/resourceUri"]`` is read too.
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
        logger.debug("ignored a malformed _meta.ui (%s): %s", tp.__name__, exc)
        return None

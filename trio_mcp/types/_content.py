"""Content blocks and resource contents: what messages, tool results and prompts carry.

The tagged union [`ContentBlock`][trio_mcp.types.ContentBlock] (``"type"``: text, image, audio,
resource_link, resource, tool_use, tool_result), [`UnknownContent`][trio_mcp.types.UnknownContent]
for a block whose ``type`` comes from a newer revision, the untagged resource contents (told apart
by their ``text`` or ``blob`` key) and the ``Annotations`` hints they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ._apps import UIResourceMeta, ui_meta
from ._base import Icon, _Wire


class Annotations(_Wire, kw_only=True):
    """Hints to the client about how to use or display an object.

    Attributes:
        audience: Who the object is meant for.
        priority: Importance from 0 (optional) to 1 (required).
        last_modified: ISO 8601 timestamp of the last change (2025-06-18+).
    """

    audience: list[str] | UnsetType = UNSET  # Role values; newer ones must not break decoding
    priority: float | UnsetType = UNSET
    last_modified: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------------------


class TextContent(_Wire, kw_only=True, tag_field="type", tag="text"):
    """Text content (``"type": "text"``)."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ImageContent(_Wire, kw_only=True, tag_field="type", tag="image"):
    """Base64-encoded image content (``"type": "image"``)."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class AudioContent(_Wire, kw_only=True, tag_field="type", tag="audio"):
    """Base64-encoded audio content (``"type": "audio"``, 2025-03-26+)."""

    type: ClassVar[Literal["audio"]] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceLink(_Wire, kw_only=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read (``"type": "resource_link"``, 2025-06-18+)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceContents(_Wire, kw_only=True):
    """The contents of a resource; a bare instance stands for a shape this library lacks.

    Known shapes decode to the subclasses
    [`TextResourceContents`][trio_mcp.types.TextResourceContents] (``text``) and
    [`BlobResourceContents`][trio_mcp.types.BlobResourceContents] (``blob``); anything else keeps
    its URI, MIME type and ``_meta`` as a plain
    [`ResourceContents`][trio_mcp.types.ResourceContents].
    """

    uri: str
    mime_type: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    @property
    def ui(self) -> UIResourceMeta | None:
        """The MCP Apps ``_meta.ui`` of these contents (CSP, permissions), or None.

        None when the server sent none, or sent one that is malformed (logged at debug).
        """
        return ui_meta(self.meta, UIResourceMeta)


class TextResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are text."""

    text: str


class BlobResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are binary, base64-encoded in ``blob``."""

    blob: str


def _resource_contents(value: Any) -> Any:
    """Turn one decoded resource-contents object into the struct its keys call for."""
    if isinstance(value, ResourceContents):
        return value
    if isinstance(value, dict):
        if "text" in value:
            return msgspec.convert(value, TextResourceContents)
        if "blob" in value:
            return msgspec.convert(value, BlobResourceContents)
    return msgspec.convert(value, ResourceContents)


class EmbeddedResource(_Wire, kw_only=True, tag_field="type", tag="resource"):
    """The contents of a resource embedded in a message (``"type": "resource"``)."""

    type: ClassVar[Literal["resource"]] = "resource"
    resource: _ResourceContentsField
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    def __post_init__(self) -> None:
        self.resource = _resource_contents(self.resource)


class ToolUseContent(_Wire, kw_only=True, tag_field="type", tag="tool_use"):
    """A model's request to use a tool, in sampling (``"type": "tool_use"``, 2025-11-25+)."""

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ToolResultContent(_Wire, kw_only=True, tag_field="type", tag="tool_result"):
    """The result of a tool use, in sampling (``"type": "tool_result"``, 2025-11-25+)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    tool_use_id: str
    content: list[_ContentField]
    structured_content: Any | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class UnknownContent(dict[str, Any]):
    """A content block of a type this library does not know, kept exactly as received.

    It is the block's JSON object itself (a ``dict``), so it re-encodes unchanged with any
    msgspec encoder. ``type`` is the block's tag; ``raw`` is a plain-dict copy.
    """

    __slots__ = ()
    __match_args__ = ("type",)

    @property
    def type(self) -> str:
        """The block's ``type`` tag."""
        return str(self.get("type", ""))

    @property
    def raw(self) -> dict[str, Any]:
        """The whole block as a plain dict."""
        return dict(self)

    def __repr__(self) -> str:
        return f"UnknownContent({dict(self)!r})"


_CONTENT_TYPES: Final[tuple[type[Any], ...]] = (
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
    ToolUseContent,
    ToolResultContent,
)

ContentBlock: TypeAlias = (
    TextContent
    | ImageContent
    | AudioContent
    | ResourceLink
    | EmbeddedResource
    | ToolUseContent
    | ToolResultContent
    | UnknownContent
)
"""Any content block. Every known ``type`` decodes anywhere content may appear; an unknown
``type`` decodes to [`UnknownContent`][trio_mcp.types.UnknownContent]."""

SamplingMessageContentBlock: TypeAlias = ContentBlock
"""Content of sampling messages (the schema lists text, image, audio, tool_use and tool_result;
any known block decodes)."""

AnyResourceContents: TypeAlias = TextResourceContents | BlobResourceContents | ResourceContents
"""Resource contents as decoded: text, blob, or the generic shape."""


# Field annotations: what msgspec decodes with at runtime (always msgspec-compatible) versus
# what type checkers see (includes the values the tolerant paths produce).


if TYPE_CHECKING:
    _ContentField: TypeAlias = ContentBlock
    _ResourceContentsField: TypeAlias = AnyResourceContents
else:
    _ContentField: TypeAlias = (
        TextContent
        | ImageContent
        | AudioContent
        | ResourceLink
        | EmbeddedResource
        | ToolUseContent
        | ToolResultContent
    )
    _ResourceContentsField = dict[str, Any]

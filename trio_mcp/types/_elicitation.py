"""Elicitation: a server asks the client's user for input, by form or by URL.

The ``elicitation/create`` params of both modes (a tagged union on ``mode``, where an absent
``mode`` means form), the JSON Schema pieces a form is made of, the client's answer and the
2025-11-25 ``notifications/elicitation/complete``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from msgspec import UNSET, UnsetType

from ._base import NotificationParams, RequestParams, Result, _Wire
from ._tasks import TaskMetadata
from ._tolerant import _convert, _mapping


class StringSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A string field of an elicitation form (2025-06-18+; ``default`` 2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_length: int | UnsetType = UNSET
    max_length: int | UnsetType = UNSET
    format: str | UnsetType = UNSET  # "email", "uri", "date" or "date-time" today
    default: str | UnsetType = UNSET


class NumberSchema(_Wire, kw_only=True):
    """A number or integer field of an elicitation form (2025-06-18+)."""

    type: Literal["number", "integer"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    minimum: float | UnsetType = UNSET
    maximum: float | UnsetType = UNSET
    default: float | UnsetType = UNSET


class BooleanSchema(_Wire, kw_only=True, tag_field="type", tag="boolean"):
    """A boolean field of an elicitation form (2025-06-18+)."""

    type: ClassVar[Literal["boolean"]] = "boolean"
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: bool | UnsetType = UNSET


class UntitledSingleSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice among plain values (2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class TitledEnumOption(_Wire, kw_only=True):
    """One option of a titled enum: its value and display title."""

    const: str
    title: str


class TitledSingleSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice among titled options (2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    one_of: list[TitledEnumOption]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class UntitledEnumItems(_Wire, kw_only=True, tag_field="type", tag="string"):
    """The ``items`` of an untitled multi-select enum."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]


class TitledEnumItems(_Wire, kw_only=True):
    """The ``items`` of a titled multi-select enum."""

    any_of: list[TitledEnumOption]


class UntitledMultiSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="array"):
    """Several choices among plain values (2025-11-25+)."""

    type: ClassVar[Literal["array"]] = "array"
    items: UntitledEnumItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class TitledMultiSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="array"):
    """Several choices among titled options (2025-11-25+)."""

    type: ClassVar[Literal["array"]] = "array"
    items: TitledEnumItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class LegacyTitledEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice with parallel ``enum_names`` (2025-06-18's EnumSchema; deprecated)."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]
    enum_names: list[str] | UnsetType = UNSET
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


SingleSelectEnumSchema: TypeAlias = UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema
"""A single-select enum field (2025-11-25+)."""

MultiSelectEnumSchema: TypeAlias = UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
"""A multi-select enum field (2025-11-25+)."""

EnumSchema: TypeAlias = (
    UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""Any enum field of an elicitation form."""

PrimitiveSchemaDefinition: TypeAlias = (
    StringSchema
    | NumberSchema
    | BooleanSchema
    | UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""A field of an elicitation form. Type-only: ``requested_schema`` stays a plain dict;
build one with ``trio_mcp.to_builtins(StringSchema(...))`` and friends."""


class ElicitRequestFormParams(RequestParams, kw_only=True):
    """Params of a form-mode ``elicitation/create`` (2025-06-18+).

    Attributes:
        message: What to show the user.
        requested_schema: A flat JSON Schema object of primitive fields: the plain
            ``dict[str, Any]`` the server sent, on purpose not a typed value. The answer is
            validated against exactly these bytes (unknown keywords kept), and the field
            types overlap on ``"type": "string"`` (text, enums, legacy enums), so no tagged
            union could decode them losslessly. Read ``requested_schema["properties"]`` (a
            dict of field name to field schema) and ``requested_schema.get("required", [])``;
            the [`PrimitiveSchemaDefinition`][trio_mcp.types.PrimitiveSchemaDefinition]
            structs describe each field's keys, and build one for a test with
            ``to_builtins(StringSchema(...))``.
        mode: ``"form"`` (2025-11-25+; absent means form).
        task: Task augmentation (2025-11-25 only).
    """

    message: str
    requested_schema: dict[str, Any]
    mode: Literal["form"] | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


class ElicitRequestURLParams(RequestParams, kw_only=True, tag_field="mode", tag="url"):
    """Params of a URL-mode ``elicitation/create`` (``"mode": "url"``, 2025-11-25+).

    Attributes:
        message: Why the user should visit the URL.
        url: The URL to open.
        elicitation_id: Opaque id of the elicitation (2025-11-25; not in 2026-07-28).
        task: Task augmentation (2025-11-25 only).
    """

    mode: ClassVar[Literal["url"]] = "url"
    message: str
    url: str
    elicitation_id: str | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams
"""Params of ``elicitation/create``: form or URL mode, told apart by ``mode``."""


def _elicit_params(value: Any) -> Any:
    """Turn decoded ``elicitation/create`` params into the struct their ``mode`` calls for."""
    if isinstance(value, (ElicitRequestFormParams, ElicitRequestURLParams)):
        return value
    mapping = _mapping(value)
    if mapping is not None and mapping.get("mode") == "url":
        return _convert(value, ElicitRequestURLParams)
    return _convert(value, ElicitRequestFormParams)


class ElicitResult(Result, kw_only=True):
    """The client's answer to ``elicitation/create`` (2025-06-18+).

    Attributes:
        action: ``"accept"`` (with ``content`` in form mode), ``"decline"`` or ``"cancel"``.
        content: The submitted form values; string lists are 2025-11-25+.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str]] | UnsetType = UNSET


class ElicitationCompleteNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/elicitation/complete`` (2025-11-25 only)."""

    elicitation_id: str


class ElicitRequest(_Wire, kw_only=True, tag_field="method", tag="elicitation/create"):
    """An elicitation input request inside an
    [`InputRequiredResult`][trio_mcp.types.InputRequiredResult] (2026-07-28)."""

    method: ClassVar[Literal["elicitation/create"]] = "elicitation/create"
    params: _ElicitParamsField

    def __post_init__(self) -> None:
        self.params = _elicit_params(self.params)


# What msgspec decodes the params of an ``ElicitRequest`` with at runtime (a plain dict, turned
# into the right mode by ``_elicit_params``) versus what type checkers see.


if TYPE_CHECKING:
    _ElicitParamsField: TypeAlias = ElicitRequestParams
else:
    _ElicitParamsField = dict[str, Any]

"""Skills over MCP (SEP-2640, ``io.modelcontextprotocol/skills``): discover, then load on use.

``skills/list`` names each skill's ``SKILL.md`` URI, its frontmatter and a manifest of its
files (URI, ``sha256:`` digest, size). Nothing is read ahead of need:
[`list_skills()`][trio_mcp.skills.list_skills] reads no file;
[`load_skill()`][trio_mcp.skills.load_skill] reads a skill's files when the application uses it and
checks each against its manifest entry, failing closed with
[`SkillVerificationError`][trio_mcp.skills.SkillVerificationError].
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec

from . import types as t
from ._exceptions import SkillVerificationError

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = [
    "MAX_FRONTMATTER_SIZE",
    "SKILLS_EXTENSION",
    "Skill",
    "SkillFile",
    "list_skills",
    "load_skill",
    "parse_frontmatter",
    "read_skill_file",
]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
"""The extension id of Skills over MCP (SEP-2640)."""


class SkillFile(msgspec.Struct, kw_only=True):
    """One file of a skill's manifest.

    Attributes:
        uri: The file's resource URI.
        digest: ``sha256:<hex>`` of its bytes.
        size: Its size in bytes, if the server said.
    """

    uri: str
    digest: str | None = None
    size: int | None = None


class Skill(msgspec.Struct, kw_only=True):
    """A ``skills/list`` entry.

    Attributes:
        uri: The URI of the skill's ``SKILL.md``.
        frontmatter: The frontmatter the server announced (checked on load).
        resources: The manifest: every file of the skill, ``SKILL.md`` included.
    """

    uri: str
    frontmatter: dict[str, Any] = {}
    resources: list[SkillFile] = []


class _ListSkillsResult(msgspec.Struct):
    skills: list[Skill]


MAX_FRONTMATTER_SIZE: Final = 64 * 1024
"""The largest ``SKILL.md`` frontmatter parsed, in characters (ordinary ones are < 2 KiB)."""
# How deep lists and maps may nest in a frontmatter.
_MAX_DEPTH: Final = 32
_loader: Any = None  # the safe YAML loader class, built on first use


def _yaml_loader() -> tuple[Any, Any]:
    """PyYAML and its safe loader (libyaml's when built), without timestamps, on first use."""
    global _loader
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError as exc:
        raise ModuleNotFoundError(
            "reading SKILL.md frontmatter needs PyYAML: pip install 'trio-mcp[skills]'"
        ) from exc
    if _loader is None:
        base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        # Dates stay strings: the frontmatter is compared with the JSON of skills/list.
        resolvers = {
            first: [
                (tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:timestamp"
            ]
            for first, entries in base.yaml_implicit_resolvers.items()
        }
        _loader = type("_FrontmatterLoader", (base,), {"yaml_implicit_resolvers": resolvers})
    return yaml, _loader


def _frontmatter_block(text: str, uri: str) -> str:
    """The YAML between the opening ``---`` line and the closing one, size-checked."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip() != "---":
        raise SkillVerificationError(f"{uri} has no YAML frontmatter", uri=uri)
    size = 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            return "\n".join(lines[1:index])
        size += len(lines[index]) + 1
        if size > MAX_FRONTMATTER_SIZE:
            raise SkillVerificationError(
                f"{uri}: the frontmatter is larger than {MAX_FRONTMATTER_SIZE} characters",
                uri=uri,
            )
    raise SkillVerificationError(f"{uri}: the frontmatter is not closed", uri=uri)


def _json_like(value: Any, uri: str, depth: int = 0) -> None:
    """Fail unless ``value`` is what JSON can say (the listing's frontmatter is JSON)."""
    if depth > _MAX_DEPTH:
        raise SkillVerificationError(f"{uri}: the frontmatter nests too deep", uri=uri)
    if isinstance(value, dict):
        for key, item in cast("dict[Any, Any]", value).items():  # type: ignore[redundant-cast]
            if not isinstance(key, str):
                raise SkillVerificationError(
                    f"{uri}: frontmatter key {key!r} is not a string", uri=uri
                )
            _json_like(item, uri, depth + 1)
    elif isinstance(value, list):
        for item in cast("list[Any]", value):  # type: ignore[redundant-cast]
            _json_like(item, uri, depth + 1)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise SkillVerificationError(
            f"{uri}: frontmatter value of type {type(value).__name__} is not JSON", uri=uri
        )


def parse_frontmatter(text: str, *, uri: str = "SKILL.md") -> dict[str, Any]:
    """Parse the YAML frontmatter of a ``SKILL.md``, safely and with bounds.

    Ordinary YAML is read (folded ``>`` and literal ``|`` text, lists, maps, comments,
    quoted strings) with PyYAML's safe loader (libyaml's when built): no Python objects are
    made, dates stay strings. Bounds: `MAX_FRONTMATTER_SIZE` characters, nesting
    depth 32, and no aliases or anchors (``&a`` / ``*a``: a "billion laughs" document
    expands exponentially through them; a skill's metadata never needs them).

    Args:
        text: The whole ``SKILL.md``.
        uri: Its URI, for error messages.

    Returns:
        The frontmatter: a mapping of JSON values.

    Raises:
        SkillVerificationError: No frontmatter, an unclosed or oversized one, invalid YAML,
            an alias or anchor, something else than a mapping, or a value JSON cannot say.
        ModuleNotFoundError: PyYAML is not installed (the ``skills`` extra).
    """
    block = _frontmatter_block(text, uri)
    yaml, loader = _yaml_loader()
    try:
        depth = 0
        for event in yaml.parse(block, Loader=loader):  # checked before anything is built
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise SkillVerificationError(
                    f"{uri}: YAML anchors and aliases are not accepted in a frontmatter",
                    uri=uri,
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > _MAX_DEPTH:
                    raise SkillVerificationError(
                        f"{uri}: the frontmatter nests deeper than {_MAX_DEPTH}", uri=uri
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        value: Any = yaml.load(block, Loader=loader)
    except yaml.YAMLError as exc:
        raise SkillVerificationError(f"{uri}: invalid YAML frontmatter: {exc}", uri=uri) from exc
    except RecursionError as exc:
        raise SkillVerificationError(f"{uri}: the frontmatter nests too deep", uri=uri) from exc
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise SkillVerificationError(
            f"{uri}: the frontmatter is a {type(value).__name__}, not a mapping", uri=uri
        )
    _json_like(value, uri)
    return cast("dict[str, Any]", value)


async def list_skills(session: ClientSession, *, timeout: float | None = None) -> list[Skill]:
    """``skills/list``: every skill the server offers; no skill file is read.

    Args:
        session: The session.
        timeout: Seconds before `trio.TooSlowError`.

    Returns:
        The [`Skill`][trio_mcp.skills.Skill] entries.

    Raises:
        ServerError: The server has no skills (``-32601``) or refused.
    """
    result: _ListSkillsResult = await session.request(
        "skills/list", {}, timeout=timeout, result_type=_ListSkillsResult
    )
    return result.skills


async def read_skill_file(
    session: ClientSession, skill: Skill, uri: str, *, timeout: float | None = None
) -> bytes:
    """Read one file of ``skill`` and check it against its manifest entry.

    Args:
        session: The session.
        skill: The skill, from [`list_skills()`][trio_mcp.skills.list_skills].
        uri: The file's URI (one of ``skill.resources``).
        timeout: Seconds for the read.

    Returns:
        The file's bytes.

    Raises:
        SkillVerificationError: Not in the manifest, not one content item, wrong size,
            no ``sha256:`` digest, or a digest that does not match.
    """
    entry = next((item for item in skill.resources if item.uri == uri), None)
    if entry is None:
        raise SkillVerificationError(f"{uri} is not in the skill's manifest", uri=uri)
    result = await session.read_resource(uri, cache=False, timeout=timeout)
    if len(result.contents) != 1:
        raise SkillVerificationError(f"{uri}: expected exactly one content item", uri=uri)
    content = result.contents[0]
    if isinstance(content, t.TextResourceContents):
        data = content.text.encode("utf-8")
    elif isinstance(content, t.BlobResourceContents):
        try:
            data = base64.b64decode(content.blob, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SkillVerificationError(f"{uri}: the blob is not base64", uri=uri) from exc
    else:
        raise SkillVerificationError(f"{uri}: unexpected content {content!r}", uri=uri)
    if entry.size is not None and len(data) != entry.size:
        raise SkillVerificationError(
            f"{uri}: {len(data)} bytes, the manifest says {entry.size}", uri=uri
        )
    if entry.digest is None or not entry.digest.startswith("sha256:"):
        raise SkillVerificationError(f"{uri}: no sha256 digest to verify against", uri=uri)
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != entry.digest.lower():
        raise SkillVerificationError(
            f"{uri}: digest {actual}, the manifest says {entry.digest}", uri=uri
        )
    return data


async def load_skill(
    session: ClientSession, skill: Skill, *, timeout: float | None = None
) -> dict[str, bytes]:
    """Load a skill to use it: ``SKILL.md`` (frontmatter compared), then its other files.

    Args:
        session: The session.
        skill: The skill, from [`list_skills()`][trio_mcp.skills.list_skills].
        timeout: Seconds for each read.

    Returns:
        Every file's bytes by URI, ``SKILL.md`` first.

    Raises:
        SkillVerificationError: A file fails its manifest entry, or the frontmatter read
            differs from the one ``skills/list`` announced. Do not use the skill then.
    """
    body = await read_skill_file(session, skill, skill.uri, timeout=timeout)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillVerificationError(f"{skill.uri} is not UTF-8", uri=skill.uri) from exc
    found = parse_frontmatter(text, uri=skill.uri)
    if found != skill.frontmatter:
        raise SkillVerificationError(
            f"{skill.uri}: frontmatter {found!r} differs from the entry's {skill.frontmatter!r}",
            uri=skill.uri,
        )
    files = {skill.uri: body}
    for item in skill.resources:
        if item.uri != skill.uri:
            files[item.uri] = await read_skill_file(session, skill, item.uri, timeout=timeout)
    return files

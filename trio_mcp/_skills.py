"""Skills over MCP (SEP-2640, ``io.modelcontextprotocol/skills``): discover, then load on use.

``skills/list`` names each skill's ``SKILL.md`` URI, its frontmatter and a manifest of its
files (URI, ``sha256:`` digest, size). Nothing is read ahead of need: :func:`list_skills`
reads no file; :func:`load_skill` reads a skill's files when the application uses it and
checks each against its manifest entry, failing closed with
:class:`SkillVerificationError`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import TYPE_CHECKING, Any, Final

import msgspec

from . import _types as t
from ._exceptions import SkillVerificationError

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = [
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


def parse_frontmatter(text: str, *, uri: str = "SKILL.md") -> dict[str, Any]:
    """Parse the YAML frontmatter of a ``SKILL.md``: flat ``key: value`` scalars only.

    Anything this small parser does not understand fails verification (fail closed).

    Args:
        text: The whole ``SKILL.md``.
        uri: Its URI, for error messages.

    Returns:
        The frontmatter's keys and (string) values.

    Raises:
        SkillVerificationError: No frontmatter, an unclosed one, or a line it cannot read.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillVerificationError(f"{uri} has no YAML frontmatter", uri=uri)
    fields: dict[str, Any] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[:1].isspace() or not key.strip():
            raise SkillVerificationError(f"{uri}: unsupported frontmatter line {line!r}", uri=uri)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[key.strip()] = value
    raise SkillVerificationError(f"{uri}: the frontmatter is not closed", uri=uri)


async def list_skills(session: ClientSession, *, timeout: float | None = None) -> list[Skill]:
    """``skills/list``: every skill the server offers; no skill file is read.

    Args:
        session: The session.
        timeout: Seconds before :class:`trio.TooSlowError`.

    Returns:
        The :class:`Skill` entries.

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
        skill: The skill, from :func:`list_skills`.
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
        skill: The skill, from :func:`list_skills`.
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

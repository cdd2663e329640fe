"""Agent skills served over MCP: list them, load ``SKILL.md``, read their files, verified.

[`list_skills()`][trio_mcp.skills.list_skills] returns a server's [`Skill`][trio_mcp.skills.Skill]
entries, [`load_skill()`][trio_mcp.skills.load_skill] reads and parses one skill,
[`read_skill_file()`][trio_mcp.skills.read_skill_file] reads one of its files; a file that does not
match its manifest (digest, size) raises
[`SkillVerificationError`][trio_mcp.skills.SkillVerificationError].
"""

from __future__ import annotations

from ._exceptions import SkillVerificationError as SkillVerificationError
from ._public import publish as _publish
from ._skills import Skill as Skill
from ._skills import SkillFile as SkillFile
from ._skills import list_skills as list_skills
from ._skills import load_skill as load_skill
from ._skills import read_skill_file as read_skill_file

__all__ = [
    "Skill",
    "SkillFile",
    "SkillVerificationError",
    "list_skills",
    "load_skill",
    "read_skill_file",
]


_publish(__name__, globals(), __all__)

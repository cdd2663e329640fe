"""SKILL.md frontmatter is ordinary YAML, read safely and within bounds (PyYAML, safe load)."""

from __future__ import annotations

import hashlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._skills import MAX_FRONTMATTER_SIZE, parse_frontmatter
from trio_mcp.testing import MockServer

pytest.importorskip("yaml")  # the skills extra (in the test extra: CI has it)

ORDINARY = """\ufeff---
# A skill as people write them
name: pdf-tools
description: >
  Extract text and tables
  from PDF files.
license: "Apache-2.0"
allowed-tools: [Read, 'Write', Bash(python:*)]
metadata:
  author: Ada Lovelace   # inline comment
  version: "1.0"
  released: 2025-10-16
  tags:
    - pdf
    - documents
instructions: |
  Step one.
  Step two: run `extract.py`.
enabled: true
retries: 3
---
# PDF tools

Body text.
"""

EXPECTED = {
    "name": "pdf-tools",
    "description": "Extract text and tables from PDF files.\n",
    "license": "Apache-2.0",
    "allowed-tools": ["Read", "Write", "Bash(python:*)"],
    "metadata": {
        "author": "Ada Lovelace",
        "version": "1.0",
        "released": "2025-10-16",  # a date stays the string it was (as in the JSON listing)
        "tags": ["pdf", "documents"],
    },
    "instructions": "Step one.\nStep two: run `extract.py`.\n",
    "enabled": True,
    "retries": 3,
}


def test_ordinary_skill_md_frontmatter() -> None:
    assert parse_frontmatter(ORDINARY) == EXPECTED
    assert parse_frontmatter(ORDINARY.replace("\n", "\r\n")) == EXPECTED  # CRLF files
    assert parse_frontmatter("---\n---\nbody") == {}


async def test_an_ordinary_skill_loads_and_verifies() -> None:
    data = ORDINARY.encode()
    server = MockServer()
    server.add_resource("skill://pdf/SKILL.md", text=ORDINARY)
    entry = {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": EXPECTED,
        "resources": [
            {
                "uri": "skill://pdf/SKILL.md",
                "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        ],
    }
    server.add_method("skills/list", lambda params: {"skills": [entry]})
    async with trio_mcp.open_mcp_session(server) as session:
        (skill,) = await trio_mcp.skills.list_skills(session)
        files = await trio_mcp.skills.load_skill(session, skill)
    assert files == {"skill://pdf/SKILL.md": data}


BILLION_LAUGHS = (
    "---\n"
    + "\n".join(
        [
            'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
            *(
                f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]"
                for i in range(8)
            ),
        ]
    )
    + "\n---\n"
)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (BILLION_LAUGHS, "anchors and aliases"),
        ("---\nbase: &b {x: 1}\nother: *b\n---\n", "anchors and aliases"),
        ("---\na: !!python/object:os.system {}\n---\n", "invalid YAML"),
        ("---\na: !!python/name:os.system\n---\n", "invalid YAML"),
        ("---\na: !!binary aGk=\n---\n", "not JSON"),
        ("---\na: !!set {x, y}\n---\n", "not JSON"),
        ("---\n? [a, b]\n: c\n---\n", "invalid YAML"),  # an unhashable key
        ("---\n1: one\n---\n", "key 1 is not a string"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\njust text\n---\n", "not a mapping"),
        ("---\na: [b\n---\n", "invalid YAML"),
        ("---\na: b\n\tc: d\n---\n", "invalid YAML"),
        ("---\n" + "a: " + "[" * 100 + "]" * 100 + "\n---\n", "nests deeper"),
        ("---\n" + "k: v\n" * (MAX_FRONTMATTER_SIZE // 4) + "---\n", "larger than"),
        ("---\na: b\n", "not closed"),
        ("no frontmatter\n", "no YAML frontmatter"),
    ],
)
def test_hostile_or_broken_frontmatter_fails_closed(text: str, problem: str) -> None:
    with pytest.raises(trio_mcp.skills.SkillVerificationError, match=problem) as caught:
        parse_frontmatter(text, uri="skill://x/SKILL.md")
    assert caught.value.uri == "skill://x/SKILL.md"


def test_yaml_is_imported_on_first_use() -> None:
    import subprocess

    code = "import sys, trio_mcp; assert 'yaml' not in sys.modules, 'yaml imported early'"
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_or_fails_closed(body: str) -> None:
    try:
        value = parse_frontmatter("---\n" + body + "\n---\n")
    except trio_mcp.skills.SkillVerificationError:
        return
    assert isinstance(value, dict)

"""Skills over MCP (SEP-2640) and the generic extension mechanism (SEP-2133)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

import trio_mcp
from trio_mcp.testing import MockServer

SKILL_MD = "---\nname: pdf\ndescription: Work with PDFs\n---\n# PDF\n"
HELPER = "print('hi')\n"


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def skills_server(*, helper_digest: str | None = None, size: int | None = None) -> MockServer:
    server = MockServer()
    server.add_resource("skill://pdf/SKILL.md", text=SKILL_MD)
    server.add_resource("skill://pdf/helper.py", text=HELPER)
    entry = {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Work with PDFs"},
        "resources": [
            {"uri": "skill://pdf/SKILL.md", "digest": digest(SKILL_MD), "size": len(SKILL_MD)},
            {
                "uri": "skill://pdf/helper.py",
                "digest": helper_digest or digest(HELPER),
                "size": len(HELPER) if size is None else size,
            },
        ],
    }
    server.add_method("skills/list", lambda params: {"skills": [entry]})
    return server


def reads(server: MockServer) -> list[str]:
    return [m["params"]["uri"] for m in server.received if m.get("method") == "resources/read"]


async def test_listing_skills_reads_no_file() -> None:
    server = skills_server()
    async with trio_mcp.open_mcp_session(server) as session:
        skills = await trio_mcp.skills.list_skills(session)
    assert [skill.uri for skill in skills] == ["skill://pdf/SKILL.md"]
    assert skills[0].frontmatter["name"] == "pdf"
    assert reads(server) == []


async def test_loading_a_skill_verifies_every_file() -> None:
    server = skills_server()
    async with trio_mcp.open_mcp_session(server) as session:
        (skill,) = await trio_mcp.skills.list_skills(session)
        files = await trio_mcp.skills.load_skill(session, skill)
    assert files == {
        "skill://pdf/SKILL.md": SKILL_MD.encode(),
        "skill://pdf/helper.py": b"print('hi')\n",
    }
    assert reads(server) == ["skill://pdf/SKILL.md", "skill://pdf/helper.py"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"helper_digest": "sha256:" + "0" * 64}, "digest"),
        ({"size": 3}, "the manifest says 3"),
        ({"helper_digest": "md5:abc"}, "no sha256 digest"),
    ],
)
async def test_a_tampered_skill_is_refused(kwargs: dict[str, Any], match: str) -> None:
    server = skills_server(**kwargs)
    async with trio_mcp.open_mcp_session(server) as session:
        (skill,) = await trio_mcp.skills.list_skills(session)
        with pytest.raises(trio_mcp.skills.SkillVerificationError, match=match) as info:
            await trio_mcp.skills.load_skill(session, skill)
    assert info.value.uri == "skill://pdf/helper.py"


async def test_frontmatter_must_match_the_listing() -> None:
    server = skills_server()
    async with trio_mcp.open_mcp_session(server) as session:
        (skill,) = await trio_mcp.skills.list_skills(session)
        skill.frontmatter["name"] = "other"
        with pytest.raises(trio_mcp.skills.SkillVerificationError, match="frontmatter"):
            await trio_mcp.skills.load_skill(session, skill)
        with pytest.raises(
            trio_mcp.skills.SkillVerificationError, match="not in the skill's manifest"
        ):
            await trio_mcp.skills.read_skill_file(session, skill, "skill://pdf/other.md")


def test_frontmatter_parser_fails_closed() -> None:
    from trio_mcp._skills import parse_frontmatter

    assert parse_frontmatter("---\na: 'b'\n---\n") == {"a": "b"}
    for bad in ("no frontmatter", "---\na: b\n", "---\na: [unclosed\n---\n"):
        with pytest.raises(trio_mcp.skills.SkillVerificationError):
            parse_frontmatter(bad)


# -- SEP-2133 -----------------------------------------------------------------------------


async def test_extensions_are_advertised_in_both_eras() -> None:
    ui = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    for eras in ("modern", "legacy"):
        server = MockServer(eras=eras)
        async with trio_mcp.open_mcp_session(server, extensions=ui, tasks=True) as session:
            await session.list_tools()
        caps = server.client_capabilities or {}
        expected = dict(ui)
        if eras == "modern":
            expected["io.modelcontextprotocol/tasks"] = {}
        assert caps["extensions"] == expected, eras


async def test_no_extensions_leave_capabilities_unchanged() -> None:
    server = MockServer(eras="modern")
    async with trio_mcp.open_mcp_session(server) as session:
        await session.list_tools()
    assert server.client_capabilities == {}


def test_bad_extension_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="extensions"):
        trio_mcp.open_mcp_session(MockServer(), extensions={"noslash": {}})


async def test_an_application_claims_a_new_result_type() -> None:
    server = MockServer(eras="modern")
    server.add_method(
        "x-example/run", lambda params: {"resultType": "x-example/deferred", "ticket": 7}
    )
    seen: list[tuple[str, dict[str, Any]]] = []

    async def redeem(method: str, result: dict[str, Any]) -> dict[str, Any]:
        seen.append((method, result))
        return {"value": result["ticket"] * 6}

    async with trio_mcp.open_mcp_session(server) as session:
        with pytest.raises(trio_mcp.ProtocolError, match="unexpected resultType"):
            await session.request("x-example/run")
        remove = session.claim_result_type("x-example/deferred", redeem, methods=["x-example/run"])
        assert await session.request("x-example/run") == {"value": 42}
        remove()
        with pytest.raises(trio_mcp.ProtocolError):
            await session.request("x-example/run")
        with pytest.raises(ValueError, match="itself"):
            session.claim_result_type("task", redeem)
    assert seen[0][0] == "x-example/run"

"""trio_mcp's client for the official MCP conformance suite (``@modelcontextprotocol/conformance``).

The harness runs ``python tests/conformance/client.py <server-url>`` with
``MCP_CONFORMANCE_SCENARIO`` (which scenario's mock server is listening),
``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the spec revision under test) and, for some
scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON) in the environment. The client exits 0 when
the scenario's steps succeeded and 1 otherwise, logging to stderr.

Only trio_mcp's public API is used. Each scenario is the ordinary work an application
would do (list, call, read); everything the protocol demands on the wire (SEP-1034
elicitation defaults, ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` headers, dropping tools
with an invalid ``x-mcp-header``, ``requestState`` echo, SSE ``retry``/``Last-Event-ID``,
version negotiation) is the library's job. The one exception is the Skills extension
(SEP-2640), which trio_mcp does not implement: its host-side rules (load a skill's files
only when the skill is used, verify each file against its manifest entry) live in the small
``SkillHost`` below, on top of ``session.request`` and ``session.read_resource``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

import trio_mcp

log = logging.getLogger("conformance-client")

CLIENT_INFO = trio_mcp.Implementation(name="trio-mcp-conformance-client", version="1.0.0")
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)


class ScenarioFailed(Exception):
    """A scenario step did not produce what the client expected."""


# --------------------------------------------------------------------- handlers


async def accept_elicitation(
    params: trio_mcp.ElicitRequestFormParams | trio_mcp.ElicitRequestURLParams,
    ctx: trio_mcp.RequestContext,
) -> dict[str, Any]:
    """Accept every elicitation without answering any field (trio_mcp fills the defaults)."""
    log.info("elicitation from %s: %s", ctx.server_name, params.message)
    return {"action": "accept", "content": {}}


async def sample(
    params: trio_mcp.CreateMessageRequestParams, ctx: trio_mcp.RequestContext
) -> dict[str, Any]:
    """Answer sampling requests with a fixed text."""
    log.info("sampling request from %s", ctx.server_name)
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the client"},
        "model": "conformance-test-model",
        "stopReason": "endTurn",
    }


ROOTS = ["file:///tmp/conformance-root"]


# --------------------------------------------------------------------- helpers


def example_value(schema: Mapping[str, Any]) -> Any:
    """A plausible argument value for a JSON Schema property."""
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return {
        "string": "example",
        "integer": 1,
        "number": 1.5,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }.get(kind, "example")


def example_arguments(tool: trio_mcp.Tool) -> dict[str, Any]:
    """Arguments for every required parameter of ``tool``."""
    properties = tool.input_schema.get("properties") or {}
    required = tool.input_schema.get("required") or []
    return {
        name: example_value(properties.get(name) or {})
        for name in required
        if isinstance(properties.get(name, {}), Mapping)
    }


def text_of(result: trio_mcp.CallToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return " ".join(
        block.text for block in result.content if isinstance(block, trio_mcp.TextContent)
    )


async def call_and_log(
    session: trio_mcp.ClientSession, name: str, arguments: Mapping[str, Any] | None = None
) -> trio_mcp.CallToolResult:
    """Call a tool, log its result, fail the scenario if the tool reported an error."""
    result = await session.call_tool(name, arguments or {})
    log.info("tools/call %s -> %s%s", name, text_of(result), " (error)" if result.is_error else "")
    if result.is_error:
        raise ScenarioFailed(f"tool {name} reported an error: {text_of(result)}")
    return result


async def list_tools(session: trio_mcp.ClientSession) -> list[trio_mcp.Tool]:
    """List the server's tools and log their names."""
    tools = await session.list_tools()
    log.info("tools/list -> %s", [tool.name for tool in tools])
    return tools


# --------------------------------------------------------------------- SEP-2640 skills


SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


class SkillVerificationError(Exception):
    """A skill file did not match its manifest entry; the skill must not be used."""


def parse_frontmatter(text: str) -> dict[str, Any]:
    """Parse the YAML frontmatter of a SKILL.md: flat ``key: value`` scalars only.

    Anything this small parser does not understand is a verification failure (fail closed).
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillVerificationError("SKILL.md has no YAML frontmatter")
    fields: dict[str, Any] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[:1].isspace() or not key.strip():
            raise SkillVerificationError(f"unsupported frontmatter line: {line!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[key.strip()] = value
    raise SkillVerificationError("SKILL.md frontmatter is not closed")


class SkillHost:
    """The host side of the Skills extension: discover, then load and verify on use."""

    def __init__(self, session: trio_mcp.ClientSession) -> None:
        self.session = session

    async def list_skills(self) -> list[dict[str, Any]]:
        """``skills/list``: every skill entry (reads no skill file)."""
        result = await self.session.request("skills/list", {})
        skills = result.get("skills") if isinstance(result, dict) else None
        if not isinstance(skills, list):
            raise ScenarioFailed(f"skills/list returned no skills list: {result!r}")
        log.info("skills/list -> %s", [skill.get("uri") for skill in skills])
        return skills

    async def read_verified(self, entry: Mapping[str, Any], uri: str) -> str:
        """Read one file of a skill and check it against the entry's ``size`` and ``digest``."""
        manifest = {item.get("uri"): item for item in entry.get("resources") or []}
        item = manifest.get(uri)
        if item is None:
            raise SkillVerificationError(f"{uri} is not in the skill's manifest")
        result = await self.session.read_resource(uri)
        texts = [c.text for c in result.contents if isinstance(c, trio_mcp.TextResourceContents)]
        if len(texts) != 1:
            raise SkillVerificationError(f"{uri}: expected one text content")
        data = texts[0].encode("utf-8")
        if "size" in item and len(data) != item["size"]:
            raise SkillVerificationError(
                f"{uri}: size {len(data)} bytes, the manifest says {item['size']}"
            )
        digest = item.get("digest")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            raise SkillVerificationError(f"{uri}: no sha256 digest to verify against")
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise SkillVerificationError(f"{uri}: digest {actual}, the manifest says {digest}")
        return texts[0]

    async def load(self, entry: Mapping[str, Any]) -> dict[str, str]:
        """Load a skill: its SKILL.md (verified, frontmatter compared), then its other files."""
        skill_uri = entry["uri"]
        body = await self.read_verified(entry, skill_uri)
        expected = entry.get("frontmatter") or {}
        found = parse_frontmatter(body)
        if found != expected:
            raise SkillVerificationError(
                f"{skill_uri}: frontmatter {found!r} differs from the entry's {expected!r}"
            )
        files = {skill_uri: body}
        for item in entry.get("resources") or []:
            if item.get("uri") != skill_uri:
                files[item["uri"]] = await self.read_verified(entry, item["uri"])
        return files


# --------------------------------------------------------------------- scenarios

Scenario = Callable[[trio_mcp.ClientSession, Mapping[str, Any]], Awaitable[None]]


async def scenario_list_tools(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Connect and list the tools (initialize, request-metadata, json-schema-ref-no-deref)."""
    await list_tools(session)


async def scenario_tools_call(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """List tools and call ``add_numbers``."""
    await list_tools(session)
    await call_and_log(session, "add_numbers", {"a": 5, "b": 3})


async def scenario_call_every_tool(
    session: trio_mcp.ClientSession, context: Mapping[str, Any]
) -> None:
    """List the tools and call each one with example arguments."""
    for tool in await list_tools(session):
        await call_and_log(session, tool.name, example_arguments(tool))


async def scenario_context_calls(
    session: trio_mcp.ClientSession, context: Mapping[str, Any]
) -> None:
    """List the tools and make the calls the harness describes in ``toolCalls``."""
    await list_tools(session)
    for call in context.get("toolCalls") or []:
        await call_and_log(session, call["name"], call.get("arguments") or {})


async def scenario_everything(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Exercise every kind of request: tools, resources, prompts."""
    await scenario_call_every_tool(session, context)
    caps = session.server_capabilities
    if caps.resources:  # UNSET is falsy
        resources = await session.list_resources()
        log.info("resources/list -> %s", [r.uri for r in resources])
        for resource in resources:
            await session.read_resource(resource.uri)
    if caps.prompts:
        prompts = await session.list_prompts()
        log.info("prompts/list -> %s", [p.name for p in prompts])
        for prompt in prompts:
            arguments = {a.name: "example" for a in prompt.arguments or [] if a.required}
            await session.get_prompt(prompt.name, arguments)


async def scenario_request_state(
    session: trio_mcp.ClientSession, context: Mapping[str, Any]
) -> None:
    """Call every tool concurrently (multi-round-trip calls must not leak into others)."""
    tools = await list_tools(session)
    async with trio.open_nursery() as nursery:
        for tool in tools:
            nursery.start_soon(call_and_log, session, tool.name, example_arguments(tool))


async def scenario_schema_echo(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Send the 2020-12 tool's ``inputSchema`` back to the server through the echo tool."""
    tools = {tool.name: tool for tool in await list_tools(session)}
    focal = tools.get("json_schema_2020_12_tool")
    if focal is None or "json_schema_echo" not in tools:
        raise ScenarioFailed(
            "the server did not list json_schema_2020_12_tool and json_schema_echo"
        )
    await call_and_log(session, "json_schema_echo", {"schema": focal.input_schema})


async def scenario_skills_list(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Discover skills without loading any (no file may be read ahead of need)."""
    await SkillHost(session).list_skills()


async def scenario_skills_load(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Discover skills and load each one, refusing any that fails verification."""
    host = SkillHost(session)
    rejected = []
    for entry in await host.list_skills():
        try:
            files = await host.load(entry)
        except SkillVerificationError as exc:
            log.warning("rejected skill %s: %s", entry.get("uri"), exc)
            rejected.append(entry.get("uri"))
            continue
        log.info("loaded skill %s (%d files)", entry.get("uri"), len(files))
    if rejected:
        raise ScenarioFailed(f"skills failed verification and were not used: {rejected}")


SCENARIOS: dict[str, Scenario] = {
    "initialize": scenario_list_tools,
    "tools_call": scenario_tools_call,
    "elicitation-sep1034-client-defaults": scenario_call_every_tool,
    "sse-retry": scenario_call_every_tool,
    "request-metadata": scenario_list_tools,
    "sep-2322-client-request-state": scenario_request_state,
    "http-standard-headers": scenario_everything,
    "http-custom-headers": scenario_context_calls,
    "http-invalid-tool-headers": scenario_call_every_tool,
    "json-schema-ref-no-deref": scenario_list_tools,
    "json-schema-2020-12-preservation": scenario_schema_echo,
    "sep-2640-client-no-prefetch": scenario_skills_list,
    "sep-2640-client-verify-digest": scenario_skills_load,
    "sep-2640-client-verify-size": scenario_skills_load,
    "sep-2640-client-verify-frontmatter": scenario_skills_load,
}


# --------------------------------------------------------------------- main


def protocol_option(version: str | None) -> str:
    """The session's ``protocol=`` for the spec revision the harness tests."""
    if version in MODERN_VERSIONS:
        return version  # type: ignore[return-value]
    if version in LEGACY_VERSIONS:
        return "legacy"
    return "auto"


async def run(url: str, scenario: str, version: str | None, context: Mapping[str, Any]) -> None:
    """Open a session to ``url`` and run the scenario's steps."""
    steps = SCENARIOS.get(scenario)
    if steps is None:
        log.warning("unknown scenario %r: connecting and listing tools only", scenario)
        steps = scenario_list_tools
    protocol = protocol_option(version)
    log.info("scenario %s, protocol version %s -> protocol=%r", scenario, version, protocol)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(
            nursery,
            url,
            protocol=protocol,
            client_info=CLIENT_INFO,
            elicitation=accept_elicitation,
            sampling=sample,
            roots=ROOTS,
            default_timeout=20.0,
        ) as session:
            log.info(
                "connected: era %s, version %s, server %s",
                session.era,
                session.protocol_version,
                session.server_info,
            )
            await steps(session, context)


def main(argv: list[str]) -> int:
    """Run one scenario against the server URL given as the last argument."""
    logging.basicConfig(
        level=logging.DEBUG if os.environ.get("CONFORMANCE_DEBUG") else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if len(argv) < 2:
        print(f"usage: {argv[0]} <server-url>", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        trio.run(run, url, scenario, version, context)
    except BaseException as exc:  # report every failure, including ExceptionGroups
        if isinstance(exc, KeyboardInterrupt):
            raise
        log.error("scenario %s failed: %r", scenario, exc, exc_info=exc)
        return 1
    log.info("scenario %s done", scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

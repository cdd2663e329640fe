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
version negotiation) is the library's job, and so are the Skills extension's host rules
(SEP-2640: load a skill's files only when it is used, verify each against its manifest):
``trio_mcp.skills.list_skills`` and ``trio_mcp.skills.load_skill``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

import trio

import trio_mcp

log = logging.getLogger("conformance-client")

CLIENT_INFO = trio_mcp.types.Implementation(name="trio-mcp-conformance-client", version="1.0.0")
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)


class ScenarioFailed(Exception):
    """A scenario step did not produce what the client expected."""


# --------------------------------------------------------------------- handlers


async def accept_elicitation(
    params: trio_mcp.types.ElicitRequestFormParams | trio_mcp.types.ElicitRequestURLParams,
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
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast("list[object]", kind) if k != "null"), None)
    examples: dict[str, Any] = {
        "string": "example",
        "integer": 1,
        "number": 1.5,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }
    return examples.get(kind, "example") if isinstance(kind, str) else "example"


def example_arguments(tool: trio_mcp.Tool) -> dict[str, Any]:
    """Arguments for every required parameter of ``tool``."""
    properties: Any = tool.input_schema.get("properties")
    required: Any = tool.input_schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    props = cast("dict[str, Any]", properties)
    arguments: dict[str, Any] = {}
    for name in cast("list[object]", required):
        if not isinstance(name, str):
            continue
        schema = props.get(name)
        if isinstance(schema, dict):
            arguments[name] = example_value(cast("dict[str, Any]", schema))
    return arguments


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
    calls: list[dict[str, Any]] = context.get("toolCalls") or []
    for call in calls:
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
    skills = await trio_mcp.skills.list_skills(session)
    log.info("skills/list -> %s", [skill.uri for skill in skills])


async def scenario_skills_load(session: trio_mcp.ClientSession, context: Mapping[str, Any]) -> None:
    """Discover skills and load each one; a skill that fails verification is not used.

    Refusing a tampered skill is the correct outcome, so it is logged, not a failure.
    """
    for entry in await trio_mcp.skills.list_skills(session):
        try:
            files = await trio_mcp.skills.load_skill(session, entry)
        except trio_mcp.skills.SkillVerificationError as exc:
            log.warning("rejected skill %s, not using it: %s", entry.uri, exc)
            continue
        log.info("loaded skill %s (%d files)", entry.uri, len(files))


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


# --------------------------------------------------------------------- authorization

# The URL the harness expects as a Client ID Metadata Document client id (auth/basic-cimd).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


class FollowRedirect:
    """A user agent that "approves" by fetching the authorization URL, as a browser would.

    The harness's mock authorization server redirects at once; the redirect's ``Location``
    is the callback URL a loopback listener would have received.
    """

    @property
    def redirect_uri(self) -> str:
        """The redirect URI registered and sent (never listened on)."""
        return REDIRECT_URI

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[FollowRedirect]:
        """One flow's redirect endpoint: this object."""
        yield self

    async def authorize(self, authorization_url: str) -> str:
        """GET the authorization URL and return where it redirects."""
        import httpx

        async with httpx.AsyncClient() as client:
            response = await client.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or location is None:
            raise ScenarioFailed(f"the authorization endpoint answered {response.status_code}")
        log.info("authorization redirect -> %s", location)
        return str(location)


def auth_for(scenario: str, context: Mapping[str, Any]) -> trio_mcp.OAuth | None:
    """The ``auth=`` for an ``auth/*`` scenario, from what the harness put in its context."""
    if not scenario.startswith("auth/"):
        return None
    if scenario.startswith("auth/client-credentials"):
        return trio_mcp.OAuth(
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm") or "ES256",
        )
    if "idp_id_token" in context:  # enterprise-managed authorization (ID-JAG, SEP-990)
        return trio_mcp.OAuth(
            grant=trio_mcp.auth.IdentityAssertionGrant(
                id_token=context["idp_id_token"],
                idp_client_id=context["idp_client_id"],
                idp_token_endpoint=context.get("idp_token_endpoint"),
                idp_issuer=context.get("idp_issuer"),
            ),
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
        )
    if "valid_jwt" in context:  # workload identity federation (jwt-bearer, SEP-1933)
        return trio_mcp.OAuth(
            grant=trio_mcp.auth.JWTBearerGrant(context["valid_jwt"]),
            client_id=context.get("client_id"),
        )
    return trio_mcp.OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        issuer=context.get("issuer"),
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="trio-mcp-conformance-client",
        user_agent=FollowRedirect(),
    )


# --------------------------------------------------------------------- main


def protocol_option(version: str | None) -> str:
    """The session's ``protocol=`` for the spec revision the harness tests."""
    if version is not None and version in MODERN_VERSIONS:
        return version
    if version in LEGACY_VERSIONS:
        return "legacy"
    return "auto"


async def run(url: str, scenario: str, version: str | None, context: Mapping[str, Any]) -> None:
    """Open a session to ``url`` and run the scenario's steps."""
    steps = SCENARIOS.get(scenario)
    auth = auth_for(scenario, context)
    if steps is None and auth is not None:
        steps = scenario_call_every_tool
    if steps is None:
        log.warning("unknown scenario %r: connecting and listing tools only", scenario)
        steps = scenario_list_tools
    protocol = protocol_option(version)
    log.info("scenario %s, protocol version %s -> protocol=%r", scenario, version, protocol)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(
            nursery,
            trio_mcp.StreamableHTTPParameters(url, auth=auth),
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

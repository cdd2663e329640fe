"""ClientSession's public API, split by area into mixins, reads as one class.

The mixins (``_session_tools``, ``_session_features``, ``_session_notifications``) carry the
public methods; what a user, ``help()``, an IDE or a type checker sees of ``ClientSession``
is the same as when one class body held them all.
"""

from __future__ import annotations

import inspect
import pydoc
import typing

import pytest

import trio_mcp
from trio_mcp import AsyncioSession, BlockingSession, ClientSession, RequestContext, _session
from trio_mcp._session_features import FeaturesAPI
from trio_mcp._session_notifications import NotificationsAPI
from trio_mcp._session_tools import ToolsAPI

#: ClientSession's public members when they were all in one class body.
PUBLIC = {
    "aclose", "add_notification_handler", "call_tool", "catalogue", "claim_result_type",
    "closed", "complete", "era", "failure", "get_prompt", "instructions", "keep_alive",
    "list_prompts", "list_prompts_page", "list_resource_templates",
    "list_resource_templates_page", "list_resources", "list_resources_page", "list_tasks",
    "list_tools", "list_tools_page", "listen", "notifications", "notify", "on_list_changed",
    "on_log", "on_progress", "on_resource_updated", "on_task_status", "ping", "protocol_version",
    "read_resource", "request", "search_tools", "server_capabilities", "server_info",
    "set_logging_level", "set_request_handler", "start_tool_task", "statistics",
    "subscribe_resource", "transport", "unsubscribe_resource", "wait_elicitation_complete",
}  # fmt: skip

MIXINS = (ToolsAPI, FeaturesAPI, NotificationsAPI)
PUBLIC |= {"on_notification"}  # an extension's notifications, typed


def test_the_public_api_is_whole() -> None:
    assert {name for name in dir(ClientSession) if not name.startswith("_")} == PUBLIC
    assert ClientSession.__module__ == "trio_mcp"
    assert ClientSession.__mro__[1:4] == MIXINS
    # each area in its own mixin: none left in ClientSession's own body but the core
    own = {name for name in vars(ClientSession) if not name.startswith("_")}
    assert own == {
        "aclose", "claim_result_type", "closed", "era", "failure", "instructions",
        "keep_alive", "notify", "ping", "protocol_version", "request", "server_capabilities",
        "server_info", "set_request_handler", "statistics", "transport",
    }  # fmt: skip
    assert {"call_tool", "start_tool_task"} <= set(vars(ToolsAPI))
    assert {"read_resource", "get_prompt", "complete"} <= set(vars(FeaturesAPI))
    assert {"listen", "catalogue", "on_log"} <= set(vars(NotificationsAPI))


def test_help_shows_every_public_member_with_its_docstring() -> None:
    text = pydoc.render_doc(ClientSession, renderer=pydoc.plaintext)
    for name in PUBLIC:
        member = inspect.getattr_static(ClientSession, name)
        doc = inspect.getdoc(member)
        assert doc, name
        assert name in text, name
        assert doc.splitlines()[0] in text, name


@pytest.mark.parametrize("cls", [ClientSession, BlockingSession, AsyncioSession])
def test_every_public_annotation_resolves_at_run_time(cls: type) -> None:
    """``typing.get_type_hints`` works on every public method, wherever it is defined."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        function = member.fget if isinstance(member, property) else member
        if inspect.isfunction(function):
            typing.get_type_hints(function)


def test_request_context_names_the_session_type() -> None:
    """``ctx.session`` is exactly a ClientSession (defined with it, so no import cycle)."""
    hints = typing.get_type_hints(RequestContext, vars(_session))
    assert hints["session"] is ClientSession
    assert trio_mcp.handlers.SamplingHandler.__args__[1] is RequestContext  # type: ignore[attr-defined]


def test_the_mixins_hold_no_state_so_the_session_can_use_slots() -> None:
    """The API mixins declare ``__slots__ = ()`` and no class-level state: they add nothing
    to an instance's layout, so ClientSession (with its other bases) can use ``__slots__``."""
    for cls in MIXINS:
        assert vars(cls)["__slots__"] == (), cls
        state = {
            name
            for name, value in vars(cls).items()
            if not name.startswith("__") and not callable(value) and not isinstance(value, property)
        }
        assert state == set(), cls
    for bridge in (BlockingSession, AsyncioSession):
        for cls in bridge.__mro__[1:4]:
            assert vars(cls)["__slots__"] == (), cls

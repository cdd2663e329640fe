"""Subscriptions: which change notifications each client gets, in both eras.

One job: the legacy era's ``resources/subscribe`` set and ``list_changed`` after
``initialize``, and the modern era's ``subscriptions/listen`` streams (what each one
honours, the acknowledgement, the notifications tagged with its subscription id, and the
completion result that ends it). The connection is reached through
`SubscriptionLink`.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._registry import JSONDict
from ._wire import SERVER_INFO, SUBSCRIPTION_ID, RequestId, RpcError, as_dict, as_list

__all__ = [
    "SubscriptionLink",
    "end_subscriptions",
    "listen",
    "notify_list_changed",
    "notify_listeners",
    "notify_resource_updated",
]


class SubscriptionLink(Protocol):
    """What subscriptions need of the connection they live on."""

    @property
    def legacy(self) -> bool:
        """Whether the connection was initialized (legacy era)."""
        ...

    @property
    def resource_subscriptions(self) -> set[str]:
        """Legacy: the URIs the client sent ``resources/subscribe`` for."""
        ...

    @property
    def subscriptions(self) -> dict[RequestId, JSONDict]:
        """Modern: each open listen stream (its request id) and what it honours."""
        ...

    @property
    def listen_filters(self) -> frozenset[str]:
        """Extension filter fields of ``subscriptions/listen`` the server honours."""
        ...

    def capabilities(self) -> JSONDict:
        """The capabilities the connection advertises."""
        ...

    def server_info(self) -> JSONDict:
        """The ``serverInfo`` the server reports."""
        ...

    async def send(self, message: JSONDict) -> None:
        """Send one message to the client."""
        ...

    async def send_result(self, request_id: RequestId, result: JSONDict) -> None:
        """Answer a request with ``result``."""
        ...


async def notify_list_changed(link: SubscriptionLink, kind: str) -> None:
    """Send ``notifications/<kind>/list_changed`` where the client asked for it."""
    method = f"notifications/{kind}/list_changed"
    if link.legacy:
        await link.send({"jsonrpc": "2.0", "method": method})
    key = f"{kind}ListChanged"
    for subscription_id, honoured in list(link.subscriptions.items()):
        if honoured.get(key) is True:
            await link.send(
                {
                    "jsonrpc": "2.0",
                    "method": method,
                    "params": {"_meta": {SUBSCRIPTION_ID: subscription_id}},
                }
            )


async def notify_resource_updated(link: SubscriptionLink, uri: str) -> None:
    """Send ``notifications/resources/updated`` to clients subscribed to ``uri``."""
    method = "notifications/resources/updated"
    if link.legacy and uri in link.resource_subscriptions:
        await link.send({"jsonrpc": "2.0", "method": method, "params": {"uri": uri}})
    for subscription_id, honoured in list(link.subscriptions.items()):
        uris: Any = honoured.get("resourceSubscriptions")
        if isinstance(uris, list) and uri in uris:
            await link.send(
                {
                    "jsonrpc": "2.0",
                    "method": method,
                    "params": {"_meta": {SUBSCRIPTION_ID: subscription_id}, "uri": uri},
                }
            )


async def notify_listeners(
    link: SubscriptionLink, key: str, method: str, params: JSONDict, match: Any = None
) -> None:
    """Send ``method`` on every listen stream that honours the filter field ``key``.

    With ``match``, only on the streams whose ``key`` holds it (a list) or equals it.
    """
    for subscription_id, honoured in list(link.subscriptions.items()):
        if key not in honoured:
            continue
        value = honoured[key]
        if match is not None and not (
            match in value if isinstance(value, list) else value == match
        ):
            continue
        meta = {**(as_dict(params.get("_meta")) or {}), SUBSCRIPTION_ID: subscription_id}
        await link.send({"jsonrpc": "2.0", "method": method, "params": {**params, "_meta": meta}})


async def end_subscriptions(link: SubscriptionLink) -> None:
    """Close every listen stream gracefully with its completion result."""
    subscriptions = list(link.subscriptions)
    link.subscriptions.clear()
    for subscription_id in subscriptions:
        await link.send_result(
            subscription_id,
            {
                "resultType": "complete",
                "_meta": {SUBSCRIPTION_ID: subscription_id, SERVER_INFO: link.server_info()},
            },
        )


async def listen(link: SubscriptionLink, request_id: RequestId, params: JSONDict) -> None:
    """``subscriptions/listen``: honour what the capabilities allow, then acknowledge."""
    wanted = as_dict(params.get("notifications"))
    if wanted is None:
        raise RpcError(-32602, "Invalid params: subscriptions/listen needs notifications")
    capabilities = link.capabilities()
    honoured: JSONDict = {}
    for key, capability in (
        ("toolsListChanged", "tools"),
        ("promptsListChanged", "prompts"),
        ("resourcesListChanged", "resources"),
    ):
        if wanted.get(key) is True and capability in capabilities:
            honoured[key] = True
    uris = as_list(wanted.get("resourceSubscriptions"))
    if uris is not None and "resources" in capabilities:
        honoured["resourceSubscriptions"] = [uri for uri in uris if isinstance(uri, str)]
    task_ids = as_list(wanted.get("taskIds"))  # the tasks extension's filter field
    if task_ids is not None:
        honoured["taskIds"] = [task_id for task_id in task_ids if isinstance(task_id, str)]
    for key in link.listen_filters:  # extensions' filter fields the script honours
        if key in wanted:
            honoured[key] = wanted[key]
    # Registered before the acknowledgement goes out: sending waits when the client's
    # buffer is full, and a change in that window must not be lost.
    link.subscriptions[request_id] = honoured
    await link.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUBSCRIPTION_ID: request_id}, "notifications": honoured},
        }
    )

"""Multi round-trip requests (MRTR, 2026-07-28): the server side of input requests.

One job. A modern handler that asks for an input the request's ``inputResponses`` does
not hold is unwound (`InputRequired`); the server then answers ``input_required``
with the missing ``inputRequests`` and a ``requestState`` it issued
(`input_required_result()`), and on the retry checks that the client echoed that
state for the same request (`check_round()`) before re-executing the handler from the
start with one more round. The answers of earlier rounds travel with the state the server
issued (the client sends only the latest round's ``inputResponses``), so a handler that asks
for one input after another gets them all. `Inputs` is the bookkeeping of one
execution.
"""

from __future__ import annotations

import base64
import json

from ._registry import JSONDict, ServerState
from ._wire import SERVER_INFO, RpcError, as_dict

__all__ = [
    "INPUT_CAPABILITIES",
    "InputRequired",
    "Inputs",
    "check_round",
    "input_required_result",
    "request_target",
]

INPUT_CAPABILITIES = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
"""The client capability each kind of input request needs."""


class InputRequired(BaseException):
    """Unwinds a modern handler that needs input the client has not provided yet."""


class Inputs:
    """The multi round-trip bookkeeping of one execution of a modern handler."""

    __slots__ = ("counter", "missing", "responses", "round")

    def __init__(
        self, params: JSONDict, round_number: int, earlier: JSONDict | None = None
    ) -> None:
        self.responses: JSONDict = {
            **(earlier or {}),
            **(as_dict(params.get("inputResponses")) or {}),
        }
        """Every answer known: the earlier rounds' (kept with the issued state) and this one's."""
        self.missing: dict[str, JSONDict] = {}
        self.counter: int = 0
        self.round: int = round_number


def request_target(params: JSONDict) -> str:
    """What an MRTR request is about: the tool/prompt name or resource URI."""
    value = params.get("name", params.get("uri"))
    return value if isinstance(value, str) else ""


def check_round(
    state: ServerState, seen: list[str], method: str, params: JSONDict
) -> tuple[int, JSONDict]:
    """Validate ``inputResponses``/``requestState``; return the round and earlier answers.

    Every ``requestState`` received is appended to ``seen`` (``MockServer.request_states_seen``).
    """
    if "inputResponses" in params and as_dict(params["inputResponses"]) is None:
        raise RpcError(-32602, "Invalid params: inputResponses must be an object")
    if "requestState" not in params:
        return 0, {}
    request_state = params["requestState"]
    if not isinstance(request_state, str):
        raise RpcError(-32602, "Invalid params: requestState must be a string")
    seen.append(request_state)
    issued = state.issued_states.get(request_state)
    if issued is None or issued[:2] != (method, request_target(params)):
        raise RpcError(
            -32602,
            "Invalid params: requestState was not issued by this server for this request "
            "(clients must echo it byte for byte, on a retry of the same request)",
        )
    return issued[2] + 1, issued[3]


def input_required_result(
    state: ServerState,
    method: str,
    params: JSONDict,
    round_number: int,
    inputs: Inputs,
    server_info: JSONDict,
) -> JSONDict:
    """The ``input_required`` result asking for ``inputs.missing``, with a new requestState."""
    state.state_serial += 1
    target = request_target(params)
    payload = json.dumps(
        {"m": method, "t": target, "r": round_number, "s": state.state_serial},
        separators=(",", ":"),
    )
    request_state = base64.b64encode(payload.encode()).decode("ascii")
    state.issued_states[request_state] = (method, target, round_number, dict(inputs.responses))
    return {
        "resultType": "input_required",
        "inputRequests": dict(inputs.missing),
        "requestState": request_state,
        "_meta": {SERVER_INFO: server_info},
    }

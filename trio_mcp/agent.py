"""The agentic tool loop: [`run_agent()`][trio_mcp.agent.run_agent], model adapters, and sampling
with a model.

[`run_agent()`][trio_mcp.agent.run_agent] (also ``trio_mcp.run_agent``) lets a `Model` call a
session's tools until it answers; [`AnthropicModel`][trio_mcp.agent.AnthropicModel] and
[`OpenAIChatModel`][trio_mcp.agent.OpenAIChatModel] adapt the two common HTTP APIs, and
[`sampling_handler()`][trio_mcp.agent.sampling_handler] answers a server's
``sampling/createMessage`` requests with a model; [`ToolIndex`][trio_mcp.agent.ToolIndex] searches a
large catalogue so a model is offered only the best matches. Failures are
[`ModelError`][trio_mcp.agent.ModelError] (the model's API) and
[`AgentError`][trio_mcp.agent.AgentError] (the loop stopped early).
"""

from __future__ import annotations

from ._agent import AgentResult as AgentResult
from ._agent import AnthropicModel as AnthropicModel
from ._agent import Model as Model
from ._agent import ModelRequest as ModelRequest
from ._agent import OpenAIChatModel as OpenAIChatModel
from ._agent import run_agent as run_agent
from ._agent import sampling_handler as sampling_handler
from ._exceptions import AgentDeadlineError as AgentDeadlineError
from ._exceptions import AgentError as AgentError
from ._exceptions import AgentIterationLimitError as AgentIterationLimitError
from ._exceptions import ModelError as ModelError
from ._public import publish as _publish
from ._toolsearch import ToolIndex as ToolIndex

__all__ = [
    "AgentDeadlineError",
    "AgentError",
    "AgentIterationLimitError",
    "AgentResult",
    "AnthropicModel",
    "Model",
    "ModelError",
    "ModelRequest",
    "OpenAIChatModel",
    "ToolIndex",
    "run_agent",
    "sampling_handler",
]


_publish(__name__, globals(), __all__)

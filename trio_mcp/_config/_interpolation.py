"""``${...}`` interpolation: resolve the variables of one config document.

One job: `Resolver` expands ``${env:NAME}``, ``${NAME}``, ``${NAME:-default}``,
``${input:id}`` (each input asked for once), ``${userHome}``, ``${workspaceFolder}`` and
friends, and remembers which values came from the environment or an input (secrets, with
the template each came from) so the model can hide them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final, cast

from .._exceptions import ConfigError
from ._model import ConfigInput, InputCallback

__all__ = ["Resolver"]

_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")
# Shorter values are not redacted (hiding every "1" would garble messages, not protect).
_MIN_SECRET: Final = 4
# Variables whose values are paths of the user's machine, not secrets.
_NOT_SECRET: Final = frozenset({
    "userHome", "workspaceFolder", "workspaceRoot", "workspaceFolderBasename", "pathSeparator",
})  # fmt: skip
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Resolver:
    """Resolves ``${...}`` in one document (each input is asked for once)."""

    def __init__(
        self,
        source: str,
        environ: Mapping[str, str],
        inputs: dict[str, ConfigInput],
        answer: InputCallback | None,
        workspace: str | None,
    ) -> None:
        self.source = source
        self.environ = environ
        self.inputs = inputs
        self.answer = answer
        self.workspace = workspace
        self.answers: dict[str, str] = {}
        self.secrets: dict[str, str] = {}
        """Each value that came from the environment or an input, and its ``${...}``."""

    async def expand(self, value: str, key_path: str) -> str:
        if "${" not in value:
            return value
        out: list[str] = []
        end = 0
        for match in _VARIABLE.finditer(value):
            out.append(value[end : match.start()])
            variable = match.group(1).strip()
            found = await self._one(variable, key_path)
            if len(found) >= _MIN_SECRET and variable.partition(":")[0] not in _NOT_SECRET:
                self.secrets.setdefault(found, match.group(0))
            out.append(found)
            end = match.end()
        out.append(value[end:])
        return "".join(out)

    async def _one(self, variable: str, key_path: str) -> str:
        kind, _, rest = variable.partition(":")
        if kind == "env" and rest:
            return self.environ.get(rest, "")  # as VS Code and Cursor: unset is empty
        if kind == "input" and rest:
            return await self._input(rest, key_path)
        if variable == "userHome":
            return os.path.expanduser("~")  # noqa: ASYNC240 (no I/O: reads $HOME)
        if variable in ("workspaceFolder", "workspaceRoot"):
            return self._workspace(variable, key_path)
        if variable == "workspaceFolderBasename":
            return os.path.basename(self._workspace(variable, key_path))
        if variable == "pathSeparator":
            return os.sep
        name, sep, default = variable.partition(":-")
        if _ENV_NAME.fullmatch(name):
            found = self.environ.get(name)
            if found is not None and (found or not sep):
                return found
            if sep:
                return default
            raise ConfigError(
                self.source,
                key_path,
                f"environment variable {name} is not set (set it, or write ${{{name}:-default}})",
            )
        raise ConfigError(self.source, key_path, f"unknown variable ${{{variable}}}")

    def _workspace(self, variable: str, key_path: str) -> str:
        if self.workspace is None:
            raise ConfigError(
                self.source, key_path, f"${{{variable}}} needs a workspace (pass workspace=)"
            )
        return self.workspace

    async def _input(self, input_id: str, key_path: str) -> str:
        if input_id in self.answers:
            return self.answers[input_id]
        spec = self.inputs.get(input_id)
        if spec is None:
            raise ConfigError(
                self.source, key_path, f"${{input:{input_id}}} names no entry of 'inputs'"
            )
        if self.answer is None:
            raise ConfigError(
                self.source,
                key_path,
                f"${{input:{input_id}}} needs an answer: pass inputs= (a callback) to load it",
            )
        try:
            value = cast("object", await self.answer(spec))  # typed str, but user code
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(
                self.source, key_path, f"the inputs callback failed for {input_id!r}: {exc!r}"
            ) from exc
        if not isinstance(value, str):
            raise ConfigError(
                self.source, key_path, f"the inputs callback returned no string for {input_id!r}"
            )
        self.answers[input_id] = value
        return value

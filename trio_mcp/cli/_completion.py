"""Shell completion: ``trio-mcp completion bash|zsh|fish`` prints a script; the script asks
``trio-mcp __complete SHELL ...`` for the words that fit where the cursor is.

Completed: the commands, the options (and the values of ``--log-level``/``--protocol``),
``auth`` and ``completion`` words, server names from the config files, tool names and
argument names (``seconds=``) from the CLI's schema cache (``$XDG_CACHE_HOME/trio-mcp/
tools``, written whenever the tools are listed). Completing never contacts a server,
starts a process, asks a question or approves anything: a name that would need any of it
is simply not offered.

Names come from servers and config files, so they are hostile text: a name holding a
control character, a tab or a newline, starting with ``-`` or longer than 256 characters is
never offered, and the others are quoted for the shell (bash gets ``shlex.quote``'d words;
zsh's ``compadd`` and fish quote what they insert themselves).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterable, Sequence
from typing import Any, cast

from .._terminal import for_terminal
from ._args import SERVER_COMMANDS, HelpFormatter
from ._args import VALUE_OPTIONS as _TAKES_VALUE

__all__ = [
    "complete",
    "completion_parser",
    "for_bash",
    "run_complete",
    "run_completion",
    "safe_name",
    "script",
]

_COMMANDS = (*SERVER_COMMANDS, "repl")
_TOP_WORDS = ("auth", "servers", "completion")
_LISTS = frozenset({"tools", "resources", "templates", "prompts"})
_VALUES = {
    "--log-level": (
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ),
    "--protocol": ("auto", "legacy", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"),
}
_OPTIONS = (
    "--json",
    "--verbose",
    "--log-level",
    "--protocol",
    "--timeout",
    "--config",
    "--env",
    "--inherit-env",
    "--cwd",
    "--header",
    "--output",
    "--yes",
    "--no-input",
    "--help",
)

_BASH = r"""# trio-mcp completion for bash: eval "$(trio-mcp completion bash)"
_trio_mcp() {
    local IFS=$'\n'
    COMPREPLY=($("${COMP_WORDS[0]}" __complete bash "${COMP_LINE:0:COMP_POINT}" \
        "${COMP_WORDS[COMP_CWORD]}" 2>/dev/null))
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then
        compopt -o nospace 2>/dev/null
    fi
}
complete -o default -F _trio_mcp trio-mcp
"""

_ZSH = r"""#compdef trio-mcp
# trio-mcp completion for zsh: trio-mcp completion zsh > "${fpath[1]}/_trio-mcp"
_trio_mcp() {
    local -a found
    found=("${(@f)$("${words[1]}" __complete zsh "$LBUFFER" "$PREFIX" 2>/dev/null)}")
    found=(${found:#})
    if (( ${#found} )); then
        compadd -S '' -- ${found:#*[^=]} ; compadd -- ${(M)found:#*[^=]}
    else
        _files
    fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _trio_mcp "$@"
else
    compdef _trio_mcp trio-mcp
fi
"""

_FISH = r"""# trio-mcp completion for fish:
#   trio-mcp completion fish > ~/.config/fish/completions/trio-mcp.fish
complete -c trio-mcp -f \
    -a '(trio-mcp __complete fish (commandline -cp) (commandline -ct) 2>/dev/null)'
complete -c trio-mcp -l config -r -F -d 'config file with named servers'
complete -c trio-mcp -l output -r -F -d 'write the result to a file'
complete -c trio-mcp -l cwd -r -a '(__fish_complete_directories)' -d 'working directory'
"""

_SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}


def script(shell: str) -> str:
    """The completion script for ``bash``, ``zsh`` or ``fish``."""
    return _SCRIPTS[shell]


def completion_parser() -> argparse.ArgumentParser:
    """The command line of ``trio-mcp completion``."""
    parser = argparse.ArgumentParser(
        prog="trio-mcp completion",
        formatter_class=HelpFormatter,
        description='Print a shell completion script. bash: eval "$(trio-mcp completion '
        'bash)" in ~/.bashrc; zsh: trio-mcp completion zsh > "${fpath[1]}/_trio-mcp"; fish: '
        "trio-mcp completion fish > ~/.config/fish/completions/trio-mcp.fish",
    )
    parser.add_argument("shell", choices=sorted(_SCRIPTS))
    return parser


def run_completion(args: argparse.Namespace) -> int:
    """Print the script (``trio-mcp completion SHELL``)."""
    sys.stdout.write(script(args.shell))
    sys.stdout.flush()
    return 0


# -- the words at the cursor --------------------------------------------------------------


def _raw_words(line: str) -> list[str]:
    """Split a command line as typed so far; the last word is the one at the cursor."""
    words: list[str] = []
    start: int | None = None
    quote: str | None = None
    i = 0
    while i < len(line):
        char = line[i]
        if quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"':
                i += 1
        elif char in " \t\n":
            if start is not None:
                words.append(line[start:i])
                start = None
        else:
            if start is None:
                start = i
            if char in "\"'":
                quote = char
            elif char == "\\":
                i += 1
        i += 1
    words.append(line[start:] if start is not None else "")
    return words


def _unquote(raw: str) -> str:
    for closing in ("", '"', "'"):
        try:
            return "".join(shlex.split(raw + closing))
        except ValueError:
            continue
    return raw


def safe_name(name: object) -> bool:
    """Whether a name from a server or config file may be offered (see the module)."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 256
        and not name.startswith("-")
        and "\t" not in name
        and for_terminal(name, newlines=False) == name
    )


def _configured_names(config: str | None) -> list[str]:
    import trio

    from .._config import load_config
    from ._servers import Unexpanded, config_sources

    async def collect() -> list[str]:
        from .._exceptions import ConfigError

        names: list[str] = []
        for source in config_sources(config):
            try:
                loaded = await load_config(source.path, environ=Unexpanded(), inputs=_refuse)
            except ConfigError:
                continue
            names += loaded.servers
        return names

    return trio.run(collect)


async def _refuse(config_input: Any) -> str:
    from .._exceptions import ConfigError

    raise ConfigError("", "", f"input {config_input.id!r} not asked during completion")


def _cached_schemas(namespace: argparse.Namespace) -> dict[str, Any]:
    import trio

    from .._exceptions import MCPError
    from ._args import UsageError
    from ._connection import read_schema_cache, resolve

    try:
        conn = trio.run(lambda: resolve(namespace, None, quiet=True))
    except (MCPError, UsageError, OSError, ValueError):
        return {}
    return read_schema_cache(conn) or {}


def _namespace(words: Sequence[str], target: str) -> argparse.Namespace:
    """The options that pick a target's schema cache, read from the words typed."""
    found: dict[str, Any] = {"env": [], "header": [], "config": None, "cwd": None}
    for option, value in zip(words, [*words[1:], ""], strict=False):
        if option in ("--env", "-e"):
            found["env"].append(value)
        elif option in ("--header", "-H"):
            found["header"].append(value)
        elif option in ("--config", "--cwd"):
            found[option[2:]] = value
    return argparse.Namespace(
        target=target,
        config=found["config"],
        env=found["env"],
        header=found["header"],
        cwd=found["cwd"],
        inherit_env="--inherit-env" in words,
        timeout=30.0,
    )


def complete(words: Sequence[str], current: str) -> list[str]:
    """The completions of ``current`` after ``words`` (unquoted, the program name left out).

    Returns:
        Unquoted candidates starting with ``current``; ``NAME=`` for argument names.
    """
    if words and words[-1] in _TAKES_VALUE:
        candidates: Iterable[str] = _VALUES.get(words[-1], ())
    elif current.startswith("-"):
        candidates = _OPTIONS
        if any(word in _LISTS for word in words):  # tools --full, resources --full, ...
            candidates = ("--full", *_OPTIONS)
    else:
        positionals: list[str] = []
        skip = False
        for word in words:
            if skip:
                skip = False
            elif word in _TAKES_VALUE:
                skip = True
            elif not word.startswith("-"):
                positionals.append(word)
        config = _namespace(words, "").config
        candidates = _for_positionals(words, positionals, config)
    return [c for c in dict.fromkeys(candidates) if c.startswith(current)]


def _for_positionals(
    words: Sequence[str], positionals: list[str], config: str | None
) -> Iterable[str]:
    count = len(positionals)
    if count == 0:
        return [*filter(safe_name, _configured_names(config)), *_TOP_WORDS]
    first = positionals[0]
    if first == "auth":
        if count == 1:
            return ("login", "status", "logout")
        return list(filter(safe_name, _configured_names(config))) if count == 2 else ()
    if first == "completion" and count == 1:
        return ("bash", "zsh", "fish")
    if first == "servers" and count == 1:
        return ()
    if count == 1:
        return _COMMANDS
    if positionals[1] != "call":
        return ()
    schemas = _cached_schemas(_namespace(words, first))
    if count == 2:
        return sorted(filter(safe_name, schemas))
    schema: object = schemas.get(positionals[2])
    properties: object = (
        cast("dict[str, object]", schema).get("properties") if isinstance(schema, dict) else None
    )
    if not isinstance(properties, dict):
        return ()
    given = {word.partition("=")[0].rstrip(":") for word in positionals[3:]}
    names: list[object] = list(cast("dict[object, object]", properties))
    return [
        f"{name}="
        for name in names
        if isinstance(name, str) and name not in given and safe_name(name)
    ]


def run_complete(argv: Sequence[str]) -> int:
    """``trio-mcp __complete SHELL LINE [SHELL_WORD]``: print the candidates, one a line.

    ``LINE`` is the command line up to the cursor; ``SHELL_WORD`` is the part of the word at
    the cursor that the shell replaces (bash splits words at ``=`` and ``:`` too): every
    candidate for bash is quoted, then cut to replace just that part.
    """
    if len(argv) < 2 or argv[0] not in _SCRIPTS:
        return 2
    shell, line = argv[0], argv[1]
    raw = _raw_words(line)
    words = [_unquote(word) for word in raw[1:-1]]
    current = _unquote(raw[-1])
    try:
        found = complete(words, current)
    except Exception:  # completion never shows a traceback in the middle of a command line
        return 1
    if shell == "bash":
        found = for_bash(found, raw[-1], argv[2] if len(argv) > 2 else raw[-1])
    sys.stdout.write("".join(f"{c}\n" for c in found))
    sys.stdout.flush()
    return 0


def for_bash(found: Sequence[str], typed: str, shell_word: str) -> list[str]:
    """Quote candidates for bash and cut them to replace the part of the word bash replaces.

    Args:
        found: The candidates, unquoted (``NAME=`` stays unquoted when NAME is plain).
        typed: The word at the cursor as typed (quotes included).
        shell_word: The part of it bash replaces (``COMP_WORDS[COMP_CWORD]``: bash also
            splits words at ``=`` and ``:``).
    """
    quoted = [c if c.endswith("=") and _plain(c[:-1]) else shlex.quote(c) for c in found]
    cut = len(typed) - len(shell_word) if typed.endswith(shell_word) else 0
    return [q[cut:] for q in quoted if q.startswith(typed[:cut])]


def _plain(text: str) -> bool:
    return shlex.quote(text) == text

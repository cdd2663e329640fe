"""Shared test configuration: hypothesis profiles for the property suites (``test_fuzz.py``).

Profiles (``HYPOTHESIS_PROFILE`` picks one explicitly):

* ``ci`` when ``CI=true``: derandomized, so a CI run is reproducible;
* ``fuzz`` when ``TRIO_MCP_FUZZ_EXAMPLES`` is set (``nox -s fuzz``): random, large budget;
* ``dev`` otherwise: random.

``TRIO_MCP_FUZZ_EXAMPLES`` is the number of examples per property (default 200). No example
database is written (the work tree is shared); a failure prints its ``@reproduce_failure``.
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

FUZZ_EXAMPLES = int(os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", "200"))

_common = {
    "deadline": None,
    "max_examples": FUZZ_EXAMPLES,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("dev", **_common)
settings.register_profile(
    "ci",
    derandomize=True,
    # no "explain" phase: it reruns a failing example many times; CI wants the verdict fast
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    **_common,
)
settings.register_profile("fuzz", **_common)

if os.environ.get("HYPOTHESIS_PROFILE"):
    PROFILE = os.environ["HYPOTHESIS_PROFILE"]
elif "TRIO_MCP_FUZZ_EXAMPLES" in os.environ:
    PROFILE = "fuzz"
elif os.environ.get("CI", "").lower() == "true":
    PROFILE = "ci"
else:
    PROFILE = "dev"
settings.load_profile(PROFILE)


def pytest_report_header() -> str:
    return f"hypothesis profile: {PROFILE}, {FUZZ_EXAMPLES} examples per property"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    fuzzing = sys.modules.get("tests.fuzzing")
    fed = fuzzing.MESSAGES_FED[0] if fuzzing is not None else 0
    if fed:
        terminalreporter.write_line(
            f"trio_mcp fuzz: {fed} generated messages fed to the client "
            f"(profile {PROFILE}, {FUZZ_EXAMPLES} examples per property)"
        )

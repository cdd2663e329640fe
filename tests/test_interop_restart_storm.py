"""A short restart storm against real servers (issue 33): ``scripts/restart_storm.py``.

Real servers (server-everything, the official Python SDK in both eras, fastmcp, the old SDK,
stdio servers in an ``open_server_group``) are SIGKILLed and started again every few seconds
while 20 tasks call them. The script checks the rules and exits 1 when one is broken: no call
waits past its deadline or raises a foreign exception, every server answers again within two
seconds of accepting connections, memory, fds and trio tasks stay flat, and no server process
outlives the run. ``nox -s storm`` runs the 3-minute version.

The storm runs in a process of its own, so what it measures is its own memory and tasks,
not pytest's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .interop_peers import ROOT, skip_unless_fastmcp, skip_unless_peers, skip_unless_sdk

pytestmark = pytest.mark.interop

STORM = ROOT / "scripts" / "restart_storm.py"
SECONDS = 40


@pytest.mark.timeout(SECONDS + 240)
def test_restart_storm(tmp_path: Path) -> None:
    skip_unless_peers()
    skip_unless_sdk()
    skip_unless_fastmcp()
    figures = tmp_path / "storm.json"
    argv = [sys.executable, str(STORM), "--seconds", str(SECONDS), "--json", str(figures)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as storm:
        try:
            out, err = storm.communicate(timeout=SECONDS + 200)
        except subprocess.TimeoutExpired:
            storm.terminate()  # SIGTERM: the script stops every server it ran, then exits
            out, err = storm.communicate(timeout=30)
            pytest.fail(f"the storm did not end by itself:\n{out}\n{err[-4000:]}")
    print(out)  # the figures, in the test's output
    assert storm.returncode == 0, f"{out}\n{err[-4000:]}"
    verdict = json.loads(figures.read_text())
    assert verdict["problems"] == [] and verdict["orphans"] == []
    assert verdict["outages"] >= 5, "too few kills to call it a storm"
    assert verdict["ok"] > 0 and verdict["max_overshoot"] <= 0.5
    kinds = verdict["recovery"]
    assert any("stdio" in kind for kind in kinds) and any("HTTP" in kind for kind in kinds)

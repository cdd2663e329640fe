"""The runnable examples of the docs pages of issue 11 run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["tool-results.md", "url-elicitation.md", "notifications.md", "roots-and-forms.md",
         "agent.md"]  # fmt: skip


def complete_examples() -> list[tuple[str, int, str]]:
    found: list[tuple[str, int, str]] = []
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)
        for index, code in enumerate(blocks):
            if "trio.run(main)" in code or code.startswith("import trio_mcp\n\ncheck"):
                found.append((page, index, code))
    return found


EXPECTED = {
    ("tool-results.md", 0): 'invalid\n/celsius: "warm" is not of type "number"\n',
    ("tool-results.md", 1): "Sum(sum=5.0)\n",
    ("url-elicitation.md", 0): "False loopback address 127.0.0.1\nTrue xn--pple-43d.com",
    ("url-elicitation.md", 1): "visit accounts.example.com: Connect your account\naccept\n",
    ("notifications.md", 0): "[warning] disk almost full\n",
    ("notifications.md", 1): "notifications/com.example/alert disk full\n",
    ("notifications.md", 2): "True\n",
    ("notifications.md", 4): "Alert(level='high', text='disk full')\n",
    ("roots-and-forms.md", 0): "file:///home/me/project\nfile:///home/me/notes\n",
    ("agent.md", 0): "2 + 3 = 5; the echo said hello\n2\n4\n",
    ("agent.md", 1): "['weather']\n['tool_42', 'tool_142', 'tool_242']\n",
}


def test_every_example_is_checked() -> None:
    assert {(page, index) for page, index, _ in complete_examples()} == set(EXPECTED)


@pytest.mark.parametrize(("page", "index", "code"), complete_examples())
def test_example_runs(page: str, index: int, code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert EXPECTED[page, index] in done.stdout

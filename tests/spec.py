"""Where the tests find the MCP specification folder (schemas and example messages).

The specification is not part of this repository. Tests that read it look in one place:

* ``TRIO_MCP_SPEC``, when set: a folder holding one sub-folder per revision
  (``2025-11-25/schema.json``, ``2026-07-28/examples/...``);
* otherwise ``../shared/spec`` beside the repository (where the project's development
  machines keep it).

Without it those tests are skipped, each with a visible reason naming the setting
(``pytest -ra`` lists them): never an empty, silently passing parametrisation.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = Path(os.environ.get("TRIO_MCP_SPEC") or ROOT.parent / "shared" / "spec").resolve()

SPEC_MISSING: str = (
    ""
    if (SPEC / "2025-11-25" / "schema.json").is_file()
    else (
        f"the MCP specification folder was not found at {SPEC}: set TRIO_MCP_SPEC to a folder "
        "with one sub-folder per revision (schema.json, examples/) to run these tests"
    )
)

needs_spec = pytest.mark.skipif(bool(SPEC_MISSING), reason=SPEC_MISSING or "spec present")

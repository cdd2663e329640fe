"""``python -m trio_mcp.cli``: the ``trio-mcp`` command."""

from __future__ import annotations

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())

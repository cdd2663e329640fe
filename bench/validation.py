"""Microbenchmark: validating a typical tool result against its outputSchema.

Compares the two maintained Python JSON Schema validators, ``jsonschema-rs`` (Rust) and
``jsonschema`` (pure Python), on a weather-style result: import time, compile time, and
microseconds per validation of a valid and an invalid value. Not a test; prints a table.

    python bench/validation.py
"""

from __future__ import annotations

import importlib
import time
import timeit
from collections.abc import Callable
from typing import Any

SCHEMA = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "conditions": {"type": "string"},
        "humidity": {"type": "integer", "minimum": 0, "maximum": 100},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["temperature", "conditions", "humidity"],
    "additionalProperties": False,
}
VALID = {"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65, "tags": ["a", "b"]}
INVALID = {"temperature": "warm", "conditions": "Partly cloudy", "humidity": 165}


def per_call_us(function: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=5)) / number * 1e6


def measure(name: str) -> tuple[str, str, str, str, str] | None:
    start = time.perf_counter()
    try:
        module: Any = importlib.import_module(name)
    except ImportError:
        print(f"{name}: not installed, skipped")
        return None
    imported_ms = (time.perf_counter() - start) * 1e3
    if name == "jsonschema_rs":

        def compile_() -> Any:
            return module.validator_for(SCHEMA, offline=True)
    else:

        def compile_() -> Any:
            return module.validators.validator_for(SCHEMA)(SCHEMA)

    validator = compile_()
    return (
        name,
        f"{imported_ms:.0f} ms",
        f"{per_call_us(compile_, 2000):.1f}",
        f"{per_call_us(lambda: list(validator.iter_errors(VALID)), 20000):.2f}",
        f"{per_call_us(lambda: list(validator.iter_errors(INVALID)), 20000):.2f}",
    )


def main() -> None:
    header = ("library", "import", "compile µs", "valid µs", "invalid µs")
    print(" | ".join(header))
    for name in ("jsonschema_rs", "jsonschema"):
        row = measure(name)
        if row is not None:
            print(" | ".join(row))


if __name__ == "__main__":
    main()

"""Searching a large tool catalogue: ToolIndex build and search times (issue 37).

``python bench/toolsearch.py [--tools 10000]``: builds a synthetic catalogue shaped like a
big real one (snake_case names of two or three words from a vocabulary of 3,000, a title,
a 25-word description, three or four argument names), indexes it and runs queries of one to
four words, printing the median of 20 runs of each. Not a timed test: the figures go in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from trio_mcp import types as t
from trio_mcp.agent import ToolIndex

QUERIES = ["weather", "create issue", "send email to customer", "list open pull requests"]
COMMON = ["get", "list", "create", "update", "delete", "send", "read", "search", "open"]
TOPICS = ["weather", "issue", "email", "customer", "pull", "requests", "file", "calendar"]


def catalogue(size: int, seed: int = 1) -> list[t.Tool]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)] + COMMON * 20 + TOPICS * 3
    tools = []
    for i in range(size):
        words = rng.sample(vocabulary, rng.choice((2, 3)))
        name = "_".join(words) + f"_{i}"
        tools.append(
            t.Tool(
                name=name,
                title=" ".join(words).title(),
                description=" ".join(rng.choices(vocabulary, k=25)),
                input_schema={
                    "type": "object",
                    "properties": {w: {"type": "string"} for w in rng.sample(vocabulary, 4)},
                },
            )
        )
    return tools


def median_ms(fn: object, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=10_000)
    size = parser.parse_args().tools
    tools = catalogue(size)
    print(f"{size} tools: build {median_ms(lambda: ToolIndex(tools), 5):.1f} ms")
    index = ToolIndex(tools)
    for query in QUERIES:
        found = len(index.search(query))
        took = median_ms(lambda q=query: index.search(q, limit=20))
        print(f"  search {query!r:28} top 20 of {found:5} matches: {took:.2f} ms")


if __name__ == "__main__":
    main()

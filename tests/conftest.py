"""Shared pytest configuration.

Fixtures live in ``tests/fixtures/`` by concern, each module owned by one part
of the project, and are registered here as plugins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.redis",
    "tests.fixtures.service",
    "tests.fixtures.api",
    "tests.fixtures.discord",
    "tests.fixtures.discord_bot",
    "tests.fixtures.browser",
]


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    """The shared Connect Four benchmark sets; skips, saying why, where they are absent."""
    from engine.bench.sets import find_benchmarks

    found = find_benchmarks()
    if found is None:
        pytest.skip(
            "Pons' benchmark sets not found: "
            "set PLYBOT_BENCHMARKS or put ../shared beside the checkout"
        )
    return found

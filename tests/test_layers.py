"""The direction of imports: ``api/`` and ``bot/`` -> ``worker/`` -> ``engine/``, never back.

Read from the source (every ``import`` and ``from ... import`` statement, including
those inside functions), so a wrong arrow fails here even where it is imported lazily.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: What each package may import of the project's own packages.
ALLOWED = {
    "engine": set(),
    "worker": {"engine"},
    "api": {"worker", "engine"},
    "bot": {"worker", "engine"},
}
#: Third-party packages a layer must not use: the engine knows no Redis, queue or web.
FORBIDDEN = {
    "engine": {"redis", "rq", "fastapi", "discord", "httpx", "pydantic"},
    "worker": {"fastapi", "discord"},
}


def imported_roots(path: Path) -> set[tuple[str, int]]:
    """The top-level package of every absolute import in ``path``, with its line."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_one_way(package: str) -> None:
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for root, line in imported_roots(path):
            own = root in ALLOWED and root != package and root not in ALLOWED[package]
            if own or root in FORBIDDEN.get(package, set()):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {root}")
    assert wrong == [], "\n".join(wrong)


def test_the_check_sees_a_wrong_arrow(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from worker.core.client import JobClient\n    import redis.asyncio"
    )
    assert imported_roots(module) == {("worker", 2), ("redis", 3)}

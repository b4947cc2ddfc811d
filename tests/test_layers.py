"""The direction of imports, layer by layer, never back:

    api/, bot/  ->  worker.core  ->  engine/
    worker.process  ->  worker.core  ->  engine/
    worker.bench  ->  worker.process, worker.core  ->  engine/
    engine.bench  ->  engine/

The front ends use the service core only (never the worker process nor the benchmarks);
the core never imports the process; nothing imports the benchmarks (``worker.bench`` may read
Pons' sets through ``engine.bench``).

Read from the source (every ``import`` and ``from ... import`` statement, including
those inside functions and relative ones), so a wrong arrow fails here even where it is
imported lazily.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: What each layer may import of the project's own layers (besides itself).
ALLOWED: dict[str, set[str]] = {
    "engine": set(),
    # The engine's benchmarks: on top of the engine, which never imports them.
    "engine.bench": {"engine"},
    "worker.core": {"engine"},
    "worker.process": {"worker.core", "engine"},
    "worker.bench": {"worker.process", "worker.core", "engine", "engine.bench"},
    "api": {"worker.core", "engine"},
    "bot": {"worker.core", "engine"},
    # worker/__init__.py: the package's docstring only.
    "worker": set(),
}
#: Third-party packages a layer must not use: the engine knows no Redis, queue or web.
FORBIDDEN = {
    "engine": {"redis", "rq", "fastapi", "discord", "httpx", "pydantic"},
    "engine.bench": {"redis", "rq", "fastapi", "discord", "httpx", "pydantic"},
    "worker.core": {"fastapi", "discord"},
    "worker.process": {"fastapi", "discord"},
    "worker.bench": {"fastapi", "discord"},
}
#: The layers, most specific first: a module belongs to the first that prefixes its name.
LAYERS = sorted(ALLOWED, key=lambda name: -name.count("."))


def layer_of(module: str) -> str | None:
    """The layer of a dotted module (or imported name), ``None`` for a third-party one."""
    for layer in LAYERS:
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def module_name(path: Path, root: Path = ROOT) -> str:
    """``worker/core/keys.py`` -> ``worker.core.keys``; a package's ``__init__`` -> the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, module: str) -> set[tuple[str, int]]:
    """Every module or name imported by ``path`` (module ``module``), dotted, with its line.

    ``from a.b import c`` gives ``a.b.c`` (``c`` may be a module or a name in ``a.b``: both
    belong to ``a.b``'s layer or a deeper one); relative imports are made absolute.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name, node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found |= {(f"{base}.{alias.name}", node.lineno) for alias in node.names}
    return found


def wrong_arrows(paths: list[Path], root: Path = ROOT) -> list[str]:
    """One line per import that breaks the layers, for ``paths`` (files under ``root``)."""
    wrong = []
    for path in paths:
        module = module_name(path, root)
        own = layer_of(module)
        assert own is not None, f"{module}: in no layer"
        for name, line in imported_names(path, module):
            layer = layer_of(name)
            top = name.split(".")[0]
            if (layer is not None and layer != own and layer not in ALLOWED[own]) or (
                top in FORBIDDEN.get(own, set())
            ):
                wrong.append(f"{path.relative_to(root)}:{line} ({own}) imports {name}")
    return wrong


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", ["engine", "worker", "api", "bot"])
def test_imports_run_one_way(package: str) -> None:
    wrong = wrong_arrows(_sources(package))
    assert wrong == [], "\n".join(wrong)


def test_every_worker_module_is_in_a_subpackage() -> None:
    """worker/ holds its three parts and its docstring, nothing else at the top."""
    top = {p.name for p in (ROOT / "worker").iterdir() if not p.name.startswith((".", "__py"))}
    assert top == {"__init__.py", "core", "process", "bench"}


@pytest.mark.parametrize(
    ("module", "source", "wrong"),
    [
        # a front end reaching into the worker process, even lazily, even by a relative import
        ("api/x.py", "def f():\n    from worker.process.jobs import warm_up\n", "worker.process"),
        ("bot/x.py", "from worker import bench\n", "worker.bench"),
        ("api/x.py", "from bot.render import title\n", "bot"),
        # the core reaching up into the process, the process into the benchmarks
        ("worker/core/x.py", "from ..process import runner\n", "worker.process"),
        ("worker/core/x.py", "import worker.process.runner\n", "worker.process"),
        ("worker/process/x.py", "from worker.bench.chaos import PHASES\n", "worker.bench"),
        ("worker/core/x.py", "from api.settings import ApiSettings\n", "api"),
        ("engine/x.py", "import worker.core.keys\n", "worker.core"),
        ("engine/x.py", "import redis.asyncio\n", "redis"),
        # the engine or a front end reaching into the engine's benchmarks
        ("engine/x.py", "from engine.bench.sets import load_set\n", "engine.bench"),
        ("api/x.py", "from engine.bench import solving\n", "engine.bench"),
    ],
)
def test_the_check_sees_a_wrong_arrow(tmp_path: Path, module: str, source: str, wrong: str) -> None:
    """The check itself: each of these imports, in a module of that layer, is caught."""
    path = tmp_path / module
    path.parent.mkdir(parents=True)
    path.write_text(source)
    found = wrong_arrows([path], root=tmp_path)
    assert len(found) == 1, found
    assert f"imports {wrong}" in found[0], found


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("api/x.py", "from worker.core.client import JobClient\nimport engine.game\n"),
        ("worker/process/x.py", "from worker.core import keys\nfrom . import jobs\n"),
        ("worker/bench/x.py", "from worker.process.processes import WorkerPool\n"),
        ("worker/bench/x.py", "from engine.bench.sets import load_set\n"),
        ("engine/bench/x.py", "from engine.solver import Solver\nfrom . import sets\n"),
        ("worker/core/x.py", "from .contract import AnalysisRequest\nimport pydantic\n"),
    ],
)
def test_the_check_lets_a_right_arrow_pass(tmp_path: Path, module: str, source: str) -> None:
    path = tmp_path / module
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert wrong_arrows([path], root=tmp_path) == []

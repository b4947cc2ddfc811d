"""docker-compose.yml and the Dockerfile: every service runs a real ``plybot`` subcommand.

Docker cannot run here; these checks read the files and run each command's ``--help``.
"""

from __future__ import annotations

import importlib
import subprocess
from importlib.metadata import entry_points
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is a dev dependency (make venv)")

ROOT = Path(__file__).resolve().parents[1]
PLYBOT = str(Path(__import__("sys").executable).parent / "plybot")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_five_services_are_there(compose: dict) -> None:
    assert set(compose["services"]) == {"redis", "cache", "api", "worker", "bot"}


@pytest.mark.parametrize("service", ["api", "worker", "bot"])
def test_each_service_command_is_a_real_plybot_subcommand(compose: dict, service: str) -> None:
    spec = compose["services"][service]
    command = spec["command"]
    assert command[0] == "plybot"
    commands = {ep.name: ep.value for ep in entry_points(group="plybot.commands")}
    assert command[1] in commands, f"{service}: '{command[1]}' is not a plybot subcommand"
    module, _, func = commands[command[1]].partition(":")
    assert callable(getattr(importlib.import_module(module), func))
    # The command's own parser accepts the options compose passes it.
    done = subprocess.run(
        [PLYBOT, *command[1:], "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"plybot {command[1]}" in done.stdout
    assert spec["environment"]["REDIS_URL"] == "redis://redis:6379/0"


def test_workers_scale_and_redis_persists(compose: dict) -> None:
    worker = compose["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    redis = compose["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert any(v.endswith(":/data") for v in redis["volumes"])
    cache = compose["services"]["cache"]["command"]
    assert cache[cache.index("--maxmemory-policy") + 1] == "allkeys-lru"
    assert worker["environment"]["PLYBOT_CACHE_URL"] == "redis://cache:6379/0"


def test_the_image_compiles_the_engine_at_build_time() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    # A build stage with a compiler makes the wheel (the C core); the runtime stage installs it.
    assert "AS build" in dockerfile
    assert "pip wheel" in dockerfile
    assert "COPY --from=build" in dockerfile
    assert "numba" not in dockerfile.lower()
    assert "from worker.process.jobs import warm_up" in dockerfile
    from worker.process.jobs import warm_up

    assert callable(warm_up)


def test_the_image_installs_pinned_hashed_versions_within_the_project_ranges() -> None:
    # packaging comes with pytest.
    import tomllib

    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "requirements.lock").read_text()
    pinned: dict[str, str] = {}
    for entry in text.replace("\\\n", " ").splitlines():
        if not entry.strip() or entry.startswith(("#", " ")):
            continue
        spec, _, marker = entry.split(" --hash")[0].partition(";")
        on_311 = {"python_full_version": "3.11.7"}  # the image's Python
        if marker.strip() and not Marker(marker.strip()).evaluate(on_311):
            continue
        name, _, version = spec.strip().partition("==")
        assert version, f"requirements.lock: '{spec.strip()}' is not pinned with =="
        assert "--hash=sha256:" in entry, f"requirements.lock: {name} has no hash"
        pinned[canonicalize_name(name)] = version
    for dependency in project["dependencies"]:
        requirement = Requirement(dependency)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not in requirements.lock (run make lock)"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"requirements.lock pins {name}=={pinned[name]}, outside pyproject's '{dependency}' "
            "(run make lock)"
        )
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes -r requirements.lock" in dockerfile
    assert "COPY requirements.lock" in dockerfile

"""The README documents every setting and every ``plybot`` command, so it cannot drift silently."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from pydantic import AliasChoices

from api.settings import ApiSettings
from bot.settings import BotSettings
from worker.core.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


#: Every setting of every layer: the core's, and what the API and the bot add to it.
FIELDS = {**Settings.model_fields, **ApiSettings.model_fields, **BotSettings.model_fields}


def _env_name(name: str) -> str:
    alias = FIELDS[name].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"PLYBOT_{name.upper()}"


def test_every_setting_is_in_the_readme() -> None:
    missing = [_env_name(n) for n in FIELDS if f"`{_env_name(n)}`" not in README]
    assert not missing, f"settings missing from README.md's table: {missing}"


def test_every_command_is_in_the_readme() -> None:
    commands = [ep.name for ep in entry_points(group="plybot.commands")]
    assert {"solve", "bench", "analyze", "play", "worker", "up", "loadtest", "serve", "bot"} <= set(
        commands
    )
    missing = [c for c in commands if f"plybot {c}" not in README]
    assert not missing, f"commands missing from README.md: {missing}"

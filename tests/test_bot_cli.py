"""``plybot bot``: a missing or rejected token is one clear line and exit 2, and the token
never reaches a log line or an error message; a login syncs the slash commands.

Discord cannot be reached from here, so these runs point discord.py's API base at a
local HTTP server (``fake_discord_api``) that answers as Discord does: 401 for a bad
token (discord.py itself raises ``LoginFailure`` from that), and the login and
command-sync calls for a good one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from bot import cli
from tests.fixtures.discord import APP_ID, FakeDiscordAPI

TOKEN = "MTEzNzQ.fake-token-for-tests.c2VjcmV0LXNob3VsZC1uZXZlci1iZS1sb2dnZWQ"
PLYBOT = os.path.join(os.path.dirname(sys.executable), "plybot")


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def all_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every log line of the CLI's run, at DEBUG, as logged: the CLI sets its logging up as
    always, then a handler that keeps the lines is added beside its handlers *without* the
    CLI's redaction filter, so the test sees whether anything logs the token at all.
    """
    lines: list[str] = []
    root = logging.getLogger()
    old_level, old_handlers = root.level, list(root.handlers)
    real_setup = cli.setup_logging

    def setup(_level: str, secrets: list[str]) -> None:
        real_setup("DEBUG", secrets)
        keep = _ListHandler(lines)
        keep.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        root.handlers.insert(0, keep)  # before the redacting handler: sees records untouched

    monkeypatch.setattr(cli, "setup_logging", setup)
    yield lines
    root.handlers[:] = old_handlers
    root.setLevel(old_level)


def test_rejected_token_is_one_line_exit_2_and_never_logged(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_discord_api: type[FakeDiscordAPI],
    all_logs: list[str],
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", TOKEN)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # never reached: login fails first

    assert cli.main([]) == 2

    out, err = capsys.readouterr()
    # Log lines go to stderr too; the error is one line of its own, the last.
    ours = [line for line in err.splitlines() if line.startswith("plybot bot:")]
    assert ours == [err.splitlines()[-1]]
    assert ours[0].startswith("plybot bot: Discord rejected DISCORD_TOKEN: reset the token")
    # It really tried to log in with the token, and Discord (the fake) said no.
    assert fake_discord_api.requests == [("GET", "/users/@me", f"Bot {TOKEN}", None)]
    assert all_logs, "the run logged nothing: the capture is broken"
    assert any("/users/@me" in line for line in all_logs)  # discord.py's own DEBUG lines
    for text in [out, err, *all_logs]:
        assert TOKEN not in text
        assert TOKEN.split(".")[-1] not in text


def test_missing_token_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "  ")
    assert cli.main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "plybot bot: DISCORD_TOKEN is not set: put the bot token from the Discord "
        "developer portal in DISCORD_TOKEN (see the README)\n"
    )


def test_the_plybot_command_runs_the_bot_entry_point() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN",)}
    done = subprocess.run(
        [PLYBOT, "bot"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith("plybot bot: DISCORD_TOKEN is not set")
    assert done.stderr.count("\n") == 1


def test_redaction_filter_scrubs_messages_arguments_and_tracebacks() -> None:
    redact = cli.RedactSecrets([TOKEN])
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "token %s here", (TOKEN,), None)
    try:
        raise RuntimeError(f"bad {TOKEN}")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert redact.filter(record)
    text = logging.Formatter().format(record)
    assert TOKEN not in text
    assert "token [redacted] here" in text
    assert "bad [redacted]" in text


@pytest.mark.redis
@pytest.mark.parametrize("guild_id", [None, 555])
def test_login_syncs_the_slash_commands_to_the_dev_guild_or_globally_once(
    redis_url: str, fake_discord_api: type[FakeDiscordAPI], guild_id: int | None
) -> None:
    from bot.app import PlybotBot
    from bot.settings import BotSettings

    fake_discord_api.token = TOKEN
    settings = BotSettings(
        redis_url=redis_url,
        discord_guild_id=guild_id,
        bot_key_prefix=f"t:cli:{time.time_ns()}:",
        bot_sweep_interval_s=3600,
    )

    async def scenario() -> None:
        async with PlybotBot(settings) as bot:
            await bot.login(TOKEN)  # discord.py runs setup_hook: Redis, buttons, cog, sync
            assert bot.get_cog("Games") is not None

    asyncio.run(scenario())
    puts = [(path, body) for method, path, _, body in fake_discord_api.requests if method == "PUT"]
    where = f"guilds/{guild_id}/" if guild_id else ""
    if guild_id:  # dev-server mode clears the global commands once, or they would show twice
        assert puts[1] == (f"/applications/{APP_ID}/commands", [])
        puts = puts[:1]
    assert [path for path, _ in puts] == [f"/applications/{APP_ID}/{where}commands"]
    commands = {c["name"]: c for c in puts[0][1]}
    assert sorted(commands) == [
        "analyze", "board", "connect4", "help", "leaderboard", "resign", "settings", "stats",
        "tictactoe",
    ]  # fmt: skip
    # A restart with the same commands syncs nothing (the digest is in Redis).
    fake_discord_api.requests.clear()
    asyncio.run(scenario())
    assert [r for r in fake_discord_api.requests if r[0] == "PUT"] == []
    options = {o["name"]: o for o in commands["connect4"]["options"]}
    assert list(options) == ["opponent", "level", "first", "position"]
    assert options["opponent"]["type"] == 6
    assert not options["opponent"].get("required")
    assert [c["value"] for c in options["level"]["choices"]] == [
        "easy",
        "medium",
        "hard",
        "perfect",
    ]
    assert options["position"]["max_length"] == 42
    tictactoe = {o["name"]: o for o in commands["tictactoe"]["options"]}
    assert list(tictactoe) == list(options)
    assert tictactoe["position"]["max_length"] == 9
    for name in ("opponent", "level", "first"):  # the same options, described alike
        assert tictactoe[name]["description"] == options[name]["description"] != ""
    analyze = {o["name"]: o for o in commands["analyze"]["options"]}
    assert analyze["game"]["required"]
    assert not analyze["position"].get("required")
    # Descriptions in French too (from bot/strings.py); names as they are, in every language.
    assert commands["connect4"]["description"] == (
        "Play Connect Four against plybot, or challenge someone."
    )
    assert commands["connect4"]["description_localizations"] == {
        "fr": "Jouer à Puissance 4 contre plybot, ou défier quelqu'un."
    }
    assert options["first"]["description_localizations"] == {
        "fr": "Qui joue en premier (vous par défaut)"
    }
    assert all(not c.get("name_localizations") for c in commands.values())
    language = {o["name"]: o for o in commands["settings"]["options"]}["language"]
    assert [c["value"] for c in language["choices"]] == ["en", "fr", "auto"]


@pytest.mark.redis
def test_sigterm_closes_a_connected_bot_gracefully_with_exit_0(
    monkeypatch: pytest.MonkeyPatch,
    redis_url: str,
    fake_discord_api: type[FakeDiscordAPI],
    all_logs: list[str],
) -> None:
    gateway = fake_discord_api.gateway  # type: ignore[attr-defined]
    fake_discord_api.token = gateway.token = TOKEN
    monkeypatch.setenv("DISCORD_TOKEN", TOKEN)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PLYBOT_BOT_KEY_PREFIX", f"t:cli:{time.time_ns()}:")

    def stop_once_connected() -> None:
        if gateway.identified.wait(60):  # logged in, synced, identified on the gateway
            os.kill(os.getpid(), signal.SIGTERM)  # what `docker stop` sends

    threading.Thread(target=stop_once_connected, daemon=True).start()
    assert cli.main([]) == 0
    session = gateway.sessions[0]
    assert session.identify is not None
    assert session.identify["intents"] == 1
    assert session.closed.wait(10)  # the bot closed its session itself...
    assert len(gateway.sessions) == 1  # ...and did not reconnect
    assert any("SIGTERM: closing gracefully" in line for line in all_logs)

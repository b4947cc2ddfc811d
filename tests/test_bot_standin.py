"""The stand-in Discord itself (``tests/fixtures/discord.py``): the rules it enforces
answer as Discord does, and its gateway behaves as Discord's for a real client.

The bot's own tests rely on these: a rule the stand-in did not enforce would let
a bot that breaks it pass.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import discord
import pytest

from bot.settings import BotSettings
from tests.fixtures.discord import APP_ID, DiscordWorld, start_bot, stop_bot


def error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


def test_rest_rules_answer_with_discords_codes(discord_world: DiscordWorld) -> None:
    world = discord_world

    async def scenario() -> None:
        await world.serve()
        bot = {"Authorization": f"Bot {world.token}"}
        async with aiohttp.ClientSession(world.url) as http:

            async def call(
                method: str, path: str, body: Any = None, headers: dict[str, str] = bot
            ) -> tuple[int, Any]:
                async with http.request(method, "/api/v10" + path, json=body, headers=headers) as r:
                    return r.status, (json.loads(await r.text()) if r.status != 204 else None)

            wrong = {"Authorization": "Bot not-the-token"}
            assert (await call("GET", "/users/@me", headers=wrong))[0] == 401
            ping = [{"name": "ping", "description": "Ping", "options": []}]
            assert (await call("PUT", f"/applications/{APP_ID}/commands", ping))[0] == 200
            alice = world.user("alice")

            # One answer, after which follow-ups and edits work; not before.
            first = world.command("ping", alice, 1, 2, {})
            callback = f"/interactions/{first.id}/{first.token}/callback"
            hook = f"/webhooks/{APP_ID}/{first.token}"
            assert await call("POST", hook, {"content": "early"}, {}) == (
                404, error(10015, "Unknown Webhook")
            )  # fmt: skip
            assert await call("POST", callback, {"type": 4, "data": {"content": "hi"}}, {}) == (
                204, None
            )  # fmt: skip
            assert await call("POST", callback, {"type": 4, "data": {"content": "again"}}, {}) == (
                400, error(40060, "Interaction has already been acknowledged.")
            )  # fmt: skip
            edited = await call("PATCH", f"{hook}/messages/@original", {"content": "edited"}, {})
            assert edited[0] == 200
            assert first.original
            assert first.original.content == "edited"
            # Its token lives 15 minutes.
            world.advance(15 * 60 + 1)
            assert await call("PATCH", f"{hook}/messages/@original", {"content": "x"}, {}) == (
                401, error(50027, "Invalid Webhook Token")
            )  # fmt: skip

            # An answer after 3 s is too late.
            late = world.command("ping", alice, 1, 2, {})
            world.advance(3.1)
            late_callback = f"/interactions/{late.id}/{late.token}/callback"
            assert await call("POST", late_callback, {"type": 5}, {}) == (
                404, error(10062, "Unknown interaction")
            )  # fmt: skip
            assert late.answered_at is None
            assert late.refused[0][0] == "late"

            # Channel posts need the bot's permissions there.
            text = {"content": "hello"}
            world.permissions[2] = discord.Permissions.none()
            assert await call("POST", "/channels/2/messages", text) == (
                403, error(50001, "Missing Access")
            )  # fmt: skip
            world.permissions[2] = discord.Permissions(view_channel=True)
            assert await call("POST", "/channels/2/messages", text) == (
                403, error(50013, "Missing Permissions")
            )  # fmt: skip
            world.permissions[2] = discord.Permissions(view_channel=True, send_messages=True)
            embed = {"embeds": [{"description": "a board"}]}
            assert (await call("POST", "/channels/2/messages", embed))[1]["code"] == 50013
            assert (await call("POST", "/channels/2/messages", text))[0] == 200

            # Who a message pings: its mentions, as its allowed_mentions let them.
            async def pinged(allowed: dict[str, Any] | None) -> list[int]:
                body = {"content": f"{alice.mention}, your move"}
                if allowed is not None:
                    body["allowed_mentions"] = allowed
                status, sent = await call("POST", "/channels/2/messages", body)
                assert status == 200
                return world.messages[int(sent["id"])].pinged

            assert await pinged(None) == [alice.id]
            assert await pinged({"parse": []}) == []
            assert await pinged({"parse": ["users"]}) == [alice.id]
            assert await pinged({"parse": [], "users": [str(alice.id)]}) == [alice.id]
            assert await pinged({"parse": [], "users": ["1"]}) == []
        await world.shutdown()

    asyncio.run(scenario())


def test_gateway_refuses_a_wrong_token_with_4004(discord_world: DiscordWorld) -> None:
    world = discord_world

    async def scenario() -> None:
        await world.serve()
        async with aiohttp.ClientSession() as http, http.ws_connect(world.gateway.url) as ws:
            hello = await ws.receive_json()
            assert hello["op"] == 10
            assert hello["d"]["heartbeat_interval"] > 0
            await ws.send_json({"op": 2, "d": {"token": "wrong", "intents": 1, "properties": {}}})
            closed = await ws.receive()
            assert closed.type is aiohttp.WSMsgType.CLOSE
            assert closed.data == 4004
        assert world.gateway.sessions == []
        await world.shutdown()

    asyncio.run(scenario())


@pytest.mark.redis
def test_a_session_asked_to_reconnect_resumes_and_keeps_answering(
    redis_url: str, discord_world: DiscordWorld
) -> None:
    world = discord_world
    settings = BotSettings(
        redis_url=redis_url,
        bot_key_prefix=f"t:standin:{time.time_ns()}:",
        bot_sweep_interval_s=3600,
    )

    async def scenario() -> None:
        bot = await start_bot(world, settings, redis_url)
        try:
            session = world.gateway.sessions[0]
            await world.gateway.reconnect(session)  # op 7, as before a Discord restart
            await world.until(lambda: session.resumes == 1 and session.connected, "a resume")
            assert len(world.gateway.sessions) == 1  # the same session, not a new one
            shown = await world.slash(bot, "help", world.user("alice"), guild_id=1, channel_id=2)
            assert shown.answer_kind == "defer"
            assert len(shown.ephemeral) == 1
        finally:
            await stop_bot(bot)

    asyncio.run(scenario())

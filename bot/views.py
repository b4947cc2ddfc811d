"""The buttons: persistent, stateless, and only about interaction.

Every button is a :class:`discord.ui.DynamicItem` whose ``custom_id`` carries
all it needs (the game's id, the ply of the board it was drawn on, the move),
registered once with ``bot.add_dynamic_items``. So a button keeps working
after the bot restarts: discord.py matches the ``custom_id`` against the
template and rebuilds the item; nothing is kept in memory between presses.

A button's callback hands the press to the ``Games`` cog; no rule of any game
lives here (which moves are enabled comes from :func:`bot.render.playable`,
i.e. the engine).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

import discord

from bot.challenges import Challenge
from bot.render import button_rows, occupant, piece, playable
from worker.games import GameSession

if TYPE_CHECKING:
    from bot.cog import Games

COG_NAME = "Games"
_ID = r"[A-Za-z0-9_-]{1,40}"


def _cog(interaction: discord.Interaction[Any]) -> Games:
    cog = interaction.client.get_cog(COG_NAME)
    if cog is None:  # pragma: no cover - the bot always loads the cog before connecting
        raise RuntimeError("the Games cog is not loaded")
    return cast("Games", cog)


class MoveButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"plybot:mv:(?P<game>{_ID}):(?P<ply>\d{{1,3}}):(?P<move>\d{{1,2}})",
):
    """Play ``move`` in game ``game_id``, as drawn on the board at ``ply``."""

    def __init__(
        self,
        game_id: str,
        ply: int,
        move: int,
        *,
        label: str | None = None,
        emoji: str | None = None,
        disabled: bool = False,
        row: int | None = None,
    ) -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                emoji=emoji,
                style=discord.ButtonStyle.secondary,
                custom_id=f"plybot:mv:{game_id}:{ply}:{move}",
                disabled=disabled,
            ),
            row=row,
        )
        self.game_id, self.ply, self.move = game_id, ply, move

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> MoveButton:
        return cls(match["game"], int(match["ply"]), int(match["move"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await _cog(interaction).on_move(interaction, self.game_id, self.ply, self.move)


class ChallengeButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"plybot:ch:(?P<challenge>{_ID}):(?P<answer>accept|decline)",
):
    """Accept or decline challenge ``challenge_id``."""

    def __init__(self, challenge_id: str, answer: str) -> None:
        accept = answer == "accept"
        super().__init__(
            discord.ui.Button(
                label="Accept" if accept else "Decline",
                style=discord.ButtonStyle.success if accept else discord.ButtonStyle.danger,
                custom_id=f"plybot:ch:{challenge_id}:{answer}",
            )
        )
        self.challenge_id, self.answer = challenge_id, answer

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ChallengeButton:
        return cls(match["challenge"], match["answer"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await _cog(interaction).on_challenge(interaction, self.challenge_id, self.answer)


#: What ``bot.add_dynamic_items`` registers.
DYNAMIC_ITEMS = (MoveButton, ChallengeButton)


def game_view(session: GameSession) -> discord.ui.View | None:
    """The move buttons of a game's board; ``None`` (no buttons) once it is over.

    All are disabled while the bot thinks; a full column or taken cell always is.
    """
    if not session.ongoing:
        return None
    position = session.position()
    enabled = set() if session.bot_to_move else playable(position)
    view = discord.ui.View(timeout=None)
    for row, moves in enumerate(button_rows(position)):
        for move in moves:
            owner = occupant(position, move)  # tic-tac-toe: the buttons are the board
            view.add_item(
                MoveButton(
                    session.id,
                    session.ply,
                    move,
                    label=None if owner is not None else position.move_name(move),
                    emoji=piece(session.game, owner) if owner is not None else None,
                    disabled=move not in enabled,
                    row=row,
                )
            )
    return view


def challenge_view(challenge: Challenge) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(ChallengeButton(challenge.id, "accept"))
    view.add_item(ChallengeButton(challenge.id, "decline"))
    return view

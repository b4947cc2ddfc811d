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
from bot.render import (
    MARKS,
    button_rows,
    occupant,
    playable,
    playing,
    table_language,
    tictactoe_line,
)
from bot.strings import say
from engine.game import Game
from engine.tictactoe import TicTacToe
from worker.core.games import GameSession

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
        style: discord.ButtonStyle = discord.ButtonStyle.secondary,
        disabled: bool = False,
        row: int | None = None,
    ) -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=style,
                custom_id=f"plybot:mv:{game_id}:{ply}:{move}",
                disabled=disabled,
            ),
            row=row,
        )
        self.game_id, self.ply, self.move = game_id, ply, move

    @classmethod
    async def from_custom_id(
        cls,
        _interaction: discord.Interaction[Any],
        _item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> MoveButton:
        return cls(match["game"], int(match["ply"]), int(match["move"]))

    async def interaction_check(self, interaction: discord.Interaction[Any]) -> bool:
        return await _cog(interaction).claim(interaction)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        cog = _cog(interaction)
        await cog.guard(interaction, cog.on_move(interaction, self.game_id, self.ply, self.move))


class ChallengeButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"plybot:ch:(?P<challenge>{_ID}):(?P<answer>accept|decline)",
):
    """Accept or decline challenge ``challenge_id`` (labelled in ``lang``; a button rebuilt
    from its ``custom_id`` is only pressed, never drawn, so its label does not matter)."""

    def __init__(self, challenge_id: str, answer: str, lang: str = "en") -> None:
        accept = answer == "accept"
        super().__init__(
            discord.ui.Button(
                label=say("button_accept" if accept else "button_decline", lang),
                style=discord.ButtonStyle.success if accept else discord.ButtonStyle.danger,
                custom_id=f"plybot:ch:{challenge_id}:{answer}",
            )
        )
        self.challenge_id, self.answer = challenge_id, answer

    @classmethod
    async def from_custom_id(
        cls,
        _interaction: discord.Interaction[Any],
        _item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ChallengeButton:
        return cls(match["challenge"], match["answer"])

    async def interaction_check(self, interaction: discord.Interaction[Any]) -> bool:
        return await _cog(interaction).claim(interaction)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        cog = _cog(interaction)
        await cog.guard(interaction, cog.on_challenge(interaction, self.challenge_id, self.answer))


class GameButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"plybot:(?P<action>resign|rematch):(?P<game>{_ID})",
):
    """Resign game ``game_id`` (while it is played), or ask for a rematch (once it is over);
    labelled in ``lang``."""

    def __init__(
        self, game_id: str, action: str, *, row: int | None = None, lang: str = "en"
    ) -> None:
        resign = action == "resign"
        super().__init__(
            discord.ui.Button(
                label=say("button_resign" if resign else "button_rematch", lang),
                style=discord.ButtonStyle.danger if resign else discord.ButtonStyle.primary,
                custom_id=f"plybot:{action}:{game_id}",
            ),
            row=row,
        )
        self.game_id, self.action = game_id, action

    @classmethod
    async def from_custom_id(
        cls,
        _interaction: discord.Interaction[Any],
        _item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> GameButton:
        return cls(match["game"], match["action"])

    async def interaction_check(self, interaction: discord.Interaction[Any]) -> bool:
        return await _cog(interaction).claim(interaction)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        cog = _cog(interaction)
        handler = cog.on_resign_button if self.action == "resign" else cog.on_rematch
        await cog.guard(interaction, handler(interaction, self.game_id))


#: What ``bot.add_dynamic_items`` registers.
DYNAMIC_ITEMS = (MoveButton, ChallengeButton, GameButton)

#: Button styles of tic-tac-toe's marks (X, O), and of the winning three at the end.
_MARK_STYLES = (discord.ButtonStyle.primary, discord.ButtonStyle.danger)
_WIN_STYLE = discord.ButtonStyle.success


def game_view(session: GameSession, position: Game | None = None) -> discord.ui.View:
    """The buttons under a game's board.

    While it is played: one move button per column (or cell), then Resign. All
    free move buttons are disabled while the bot thinks; a full column always
    is. Tic-tac-toe's buttons are its board: a taken cell shows its mark (X
    blue, O red; the last one in brackets), never dimmed by disabling (pressing
    it is refused by the rules). Once over: Rematch, and for tic-tac-toe the
    final board with the winning three in green. Labelled in the game's language.
    ``position`` is ``session``'s, got once by the caller (here if not given).
    """
    position = session.position() if position is None else position
    live = playing(session)
    enabled = set() if session.bot_to_move or not live else playable(position)
    ttt = isinstance(position, TicTacToe)
    view = discord.ui.View(timeout=None)
    rows = button_rows(position)
    if live or ttt:
        won = frozenset[int]()
        if isinstance(position, TicTacToe) and not live:
            won = tictactoe_line(position)
        last = position.copy().pop() if position.ply else None
        for row, moves in enumerate(rows):
            for move in moves:
                owner = occupant(position, move)
                label = position.move_name(move)
                style = discord.ButtonStyle.secondary
                disabled = move not in enabled
                if owner is not None:
                    label = f"({MARKS[owner]})" if move == last else MARKS[owner]
                    style = _WIN_STYLE if move in won else _MARK_STYLES[owner]
                    # A mark is the board: Discord dims a disabled button to half its
                    # contrast, so marks stay enabled (a press is refused: cell taken).
                    disabled = False
                view.add_item(
                    MoveButton(
                        session.id,
                        session.ply,
                        move,
                        label=label,
                        style=style,
                        disabled=disabled,
                        row=row,
                    )
                )
    action = "resign" if live else "rematch"
    view.add_item(GameButton(session.id, action, row=len(rows), lang=table_language(session)))
    return view


def challenge_view(challenge: Challenge) -> discord.ui.View:
    """Accept and Decline, in the challenge's language."""
    lang = table_language(challenge)
    view = discord.ui.View(timeout=None)
    view.add_item(ChallengeButton(challenge.id, "accept", lang))
    view.add_item(ChallengeButton(challenge.id, "decline", lang))
    return view

"""Every Redis key the Discord bot uses, in one place (under one prefix).

The games themselves are :class:`worker.core.games.GameStore` sessions under the
same prefix (``{prefix}game:{id}``), so the store's index of ongoing games
holds only the bot's games, never the HTTP API's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    prefix: str = "plybot:discord:"

    def claim(self, channel_id: str, user_id: str) -> str:
        """The game (or open challenge) ``user_id`` has in ``channel_id``: at most one."""
        return f"{self.prefix}claim:{channel_id}:{user_id}"

    def guild_active(self, guild_id: str) -> str:
        """Set of the guild's games and open challenges (its size is capped)."""
        return f"{self.prefix}guild:{guild_id}:active"

    @property
    def active(self) -> str:
        """Hash of every game and open challenge not yet settled -> its guild id."""
        return f"{self.prefix}active"

    def settled(self, game_id: str) -> str:
        """Set once a finished game's stats were counted: settlement happens exactly once."""
        return f"{self.prefix}settled:{game_id}"

    def challenge(self, challenge_id: str) -> str:
        return f"{self.prefix}challenge:{challenge_id}"

    @property
    def challenge_deadlines(self) -> str:
        """Sorted set of open challenges by the time they expire."""
        return f"{self.prefix}challenges"

    def stats(self, guild_id: str, user_id: str) -> str:
        """Hash of a user's results in a guild (fields: see :mod:`bot.stats`)."""
        return f"{self.prefix}guild:{guild_id}:stats:{user_id}"

    def rating(self, guild_id: str, game: str) -> str:
        """Sorted set of users by Elo rating between users, per guild and game."""
        return f"{self.prefix}guild:{guild_id}:elo:{game}"

    def cooldown(self, action: str, user_id: str) -> str:
        return f"{self.prefix}cooldown:{action}:{user_id}"

    def warned(self, game_id: str, ply: int) -> str:
        """Set once the player to move at ``ply`` was warned of the forfeit."""
        return f"{self.prefix}warned:{game_id}:{ply}"

    def synced(self, scope: str) -> str:
        """Hash of the slash commands last synced to ``scope`` (``global`` or a guild id)."""
        return f"{self.prefix}synced:{scope}"

    def turn_ping(self, game_id: str) -> str:
        """The message id of a game's latest "your move" ping (replaced by the next)."""
        return f"{self.prefix}turnping:{game_id}"

    def guild_settings(self, guild_id: str) -> str:
        """Hash of a server's settings (``level``, ``timeout_s``, ``channel``)."""
        return f"{self.prefix}guild:{guild_id}:settings"

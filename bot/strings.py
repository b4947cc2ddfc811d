"""Every reply the bot sends to one person, in each language it speaks.

A reply is named by a key and filled from parameters; :func:`say` picks the
language from the user's Discord locale (``interaction.locale``), falling back
to English. English and French are shipped; a language is one more column.
What quotes the engine (a refused position, an illegal move) keeps the
engine's English inside the translated sentence.
"""

from __future__ import annotations

from typing import Any

#: Languages shipped, the first the fallback.
LANGUAGES = ("en", "fr")

STRINGS: dict[str, dict[str, str]] = {
    "unknown_game": {
        "en": "'{game}': unknown game (known: {known})",
        "fr": "« {game} » : jeu inconnu (jeux connus : {known})",
    },
    "bad_first": {
        "en": "'{first}': first must be one of {known}",
        "fr": "« {first} » : first doit valoir {known}",
    },
    "bad_position": {"en": "Bad position: {reason}", "fr": "Position invalide : {reason}"},
    "position_too_long": {
        "en": "Bad position: longer than {n} moves",
        "fr": "Position invalide : plus de {n} coups",
    },
    "games_channel": {
        "en": "Games are played in <#{channel}> on this server.",
        "fr": "Sur ce serveur, les parties se jouent dans <#{channel}>.",
    },
    "unknown_level": {
        "en": "'{level}': unknown level (levels: {known})",
        "fr": "« {level} » : niveau inconnu (niveaux : {known})",
    },
    "level_vs_member": {
        "en": "`level` is plybot's strength: it does not apply when you challenge a member. "
        "Leave it out, or leave out `opponent` to play plybot.",
        "fr": "`level` est la force de plybot : il ne s'applique pas quand vous défiez un "
        "membre. Retirez-le, ou retirez `opponent` pour jouer contre plybot.",
    },
    "challenge_self": {
        "en": "You cannot challenge yourself: leave `opponent` empty to play plybot.",
        "fr": "Vous ne pouvez pas vous défier vous-même : laissez `opponent` vide pour jouer "
        "contre plybot.",
    },
    "challenge_bot": {
        "en": "{who} is a bot and cannot accept a challenge.",
        "fr": "{who} est un bot et ne peut pas accepter de défi.",
    },
    "guild_full": {
        "en": "This server already has {n} games going; try again when one ends.",
        "fr": "Ce serveur a déjà {n} parties en cours ; réessayez quand l'une se termine.",
    },
    "busy_self": {
        "en": "You already have a game or challenge in this channel: finish it or `/resign` first.",
        "fr": "Vous avez déjà une partie ou un défi dans ce salon : terminez-le ou faites "
        "`/resign` d'abord.",
    },
    "busy_other": {
        "en": "{who} already has a game or challenge in this channel: finish it or `/resign` "
        "first.",
        "fr": "{who} a déjà une partie ou un défi dans ce salon : terminez-le ou faites "
        "`/resign` d'abord.",
    },
    "not_open": {
        "en": "This challenge is no longer open.",
        "fr": "Ce défi n'est plus ouvert.",
    },
    "only_accept": {
        "en": "Only {who} can accept this challenge.",
        "fr": "Seul·e {who} peut accepter ce défi.",
    },
    "only_answer": {
        "en": "Only {who} can answer this challenge.",
        "fr": "Seul·e {who} peut répondre à ce défi.",
    },
    "game_gone": {"en": "This game no longer exists.", "fr": "Cette partie n'existe plus."},
    "game_over": {"en": "This game is over.", "fr": "Cette partie est terminée."},
    "not_playing": {
        "en": "You are not playing in this game.",
        "fr": "Vous ne jouez pas dans cette partie.",
    },
    "bot_thinking": {
        "en": "Not your turn: plybot is thinking.",
        "fr": "Ce n'est pas votre tour : plybot réfléchit.",
    },
    "not_your_turn": {
        "en": "Not your turn: it is {who}'s move.",
        "fr": "Ce n'est pas votre tour : c'est à {who} de jouer.",
    },
    "stale_board": {
        "en": "That board was out of date; here is the current one.",
        "fr": "Ce plateau n'était plus à jour ; voici le plateau actuel.",
    },
    "illegal": {"en": "{reason}", "fr": "Coup refusé : {reason}"},
    "no_game_here": {
        "en": "You have no game in this channel.",
        "fr": "Vous n'avez pas de partie dans ce salon.",
    },
    "rematch_players_only": {
        "en": "Only its players can ask for a rematch.",
        "fr": "Seuls ses joueurs peuvent demander une revanche.",
    },
    "still_playing": {
        "en": "This game is still being played.",
        "fr": "Cette partie est encore en cours.",
    },
    "cannot_analyse": {
        "en": "Cannot analyse that position: {reason}",
        "fr": "Impossible d'analyser cette position : {reason}",
    },
    "cooldown": {
        "en": "`/analyze` is cooling down: try again in {s} s.",
        "fr": "`/analyze` est en pause : réessayez dans {s} s.",
    },
    "analysis_failed": {
        "en": "The analysis failed: {reason}",
        "fr": "L'analyse a échoué : {reason}",
    },
    "unavailable": {
        "en": "plybot's storage is not answering right now; try again in a moment.",
        "fr": "Le stockage de plybot ne répond pas pour l'instant ; réessayez dans un moment.",
    },
    "no_workers": {
        "en": "plybot's engine is offline right now (no worker is running), so it cannot play "
        "or analyse. Try again later; games between members still work.",
        "fr": "Le moteur de plybot est hors ligne (aucun worker ne tourne) : il ne peut ni "
        "jouer ni analyser. Réessayez plus tard ; les parties entre membres fonctionnent.",
    },
    "failed": {
        "en": "Something went wrong on plybot's side; it was logged. Try again in a moment.",
        "fr": "Quelque chose a échoué du côté de plybot (c'est journalisé). Réessayez dans un "
        "moment.",
    },
    "missing_permissions": {
        "en": "I cannot show a game in this channel: I am missing {missing} here. Ask a server "
        "admin to grant them to plybot, or start the game in another channel.",
        "fr": "Je ne peux pas afficher de partie dans ce salon : il me manque {missing} ici. "
        "Demandez à un admin du serveur de les accorder à plybot, ou lancez la partie "
        "dans un autre salon.",
    },
    "managers_only": {
        "en": "Only members with Manage Server can change plybot's settings here.",
        "fr": "Seuls les membres avec Gérer le serveur peuvent changer les réglages de plybot.",
    },
    "timeout_bounds": {
        "en": "The move timeout must be between 1 minute and 7 days.",
        "fr": "Le délai par coup doit être entre 1 minute et 7 jours.",
    },
    "settings_shown": {"en": "Settings of this server:", "fr": "Réglages de ce serveur :"},
    "settings_changed": {
        "en": "Settings changed.",
        "fr": "Réglages modifiés.",
    },
    "settings_note": {
        "en": "New games use them; games being played keep their timeout.",
        "fr": "Les nouvelles parties les utilisent ; les parties en cours gardent leur délai.",
    },
    "settings_lines": {
        "en": "Default level against plybot: **{level}**\n"
        "Move timeout: **{timeout}** (then the player to move forfeits)\n"
        "Games are played in: {channel}",
        "fr": "Niveau par défaut contre plybot : **{level}**\n"
        "Délai par coup : **{timeout}** (ensuite, le joueur au trait perd par forfait)\n"
        "Les parties se jouent dans : {channel}",
    },
    "any_channel": {"en": "any channel", "fr": "n'importe quel salon"},
    "minutes": {"en": "{n} minutes", "fr": "{n} minutes"},
    "minute": {"en": "1 minute", "fr": "1 minute"},
    "hours": {"en": "{n} hours", "fr": "{n} heures"},
    "hour": {"en": "1 hour", "fr": "1 heure"},
}


def language(locale: object) -> str:
    """The shipped language for a Discord locale (``fr``, ``en-US``, a ``discord.Locale``)."""
    code = str(getattr(locale, "value", locale) or "").split("-")[0].lower()
    return code if code in LANGUAGES else LANGUAGES[0]


def say(key: str, lang: str = "en", **params: Any) -> str:
    """The reply ``key`` in ``lang`` (English where it has no translation), filled in."""
    texts = STRINGS[key]
    return texts.get(lang, texts[LANGUAGES[0]]).format(**params)

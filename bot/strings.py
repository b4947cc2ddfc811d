"""Every text the bot shows, in each language it speaks.

A text is named by a key and filled from parameters (:func:`say`); every key
has every shipped language, with the same ``{parameters}``. English and French
are shipped; a language is one more column. Which language a text is said in
is the caller's choice (see :mod:`bot.cog`): a reply only one person sees
follows that person's Discord locale (``interaction.locale``, see
:func:`language`); a public message (a board, a challenge, an announcement, an
answer to ``/analyze`` or ``/stats``) follows the server (its ``language``
setting, else its Discord locale), and a game's or challenge's messages keep the
language it started in. What quotes the engine (a refused position, an illegal
move, an analysis's note) keeps the engine's English inside the translated
sentence. The slash commands' descriptions are here too (``cmd_*``, ``opt_*``),
given to Discord in every language by :class:`bot.cog.StringsTranslator`; the
commands' and options' names are the same in every language. Log messages are
not here: they stay English where they are logged.
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
    "old_board": {
        "en": "That board was replaced by a newer one; play on it: {link}",
        "fr": "Ce plateau a été remplacé par un plus récent ; jouez sur celui-ci : {link}",
    },
    "aborted_permissions_told": {
        "en": "plybot can no longer show this game here (missing: {missing}), so the game "
        "ended with no result: it counts in no rating or record. Ask a server admin to give "
        "plybot its permissions back, or play in another channel.",
        "fr": "plybot ne peut plus afficher cette partie ici (il manque : {missing}) : elle "
        "s'arrête donc sans résultat et ne compte ni au classement ni au bilan. Demandez à "
        "un admin du serveur de rendre ses permissions à plybot, ou jouez dans un autre salon.",
    },
    "challenge_cooldown": {
        "en": "You challenged {who} a moment ago; you can challenge them again <t:{t}:R>.",
        "fr": "Vous avez défié {who} il y a un instant ; vous pourrez le refaire <t:{t}:R>.",
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
        "Games are played in: {channel}\n"
        "Language of boards and announcements: **{language}**{origin}",
        "fr": "Niveau par défaut contre plybot : **{level}**\n"
        "Délai par coup : **{timeout}** (ensuite, le joueur au trait perd par forfait)\n"
        "Les parties se jouent dans : {channel}\n"
        "Langue des plateaux et des annonces : **{language}**{origin}",
    },
    "language_en": {"en": "English", "fr": "anglais"},
    "language_fr": {"en": "French", "fr": "français"},
    "language_of_guild": {
        "en": " (the server's language in Discord)",
        "fr": " (la langue du serveur dans Discord)",
    },
    "any_channel": {"en": "any channel", "fr": "n'importe quel salon"},
    "minutes": {"en": "{n} minutes", "fr": "{n} minutes"},
    "minute": {"en": "1 minute", "fr": "1 minute"},
    "hours": {"en": "{n} hours", "fr": "{n} heures"},
    "hour": {"en": "1 hour", "fr": "1 heure"},
    # -- the games' names, pieces and moves (boards, challenges, analyses) --
    "title_connect4": {"en": "Connect Four", "fr": "Puissance 4"},
    "title_tictactoe": {"en": "Tic-tac-toe", "fr": "Morpion"},
    "side_red": {"en": "Red", "fr": "Rouge"},
    "side_yellow": {"en": "Yellow", "fr": "Jaune"},
    "column": {"en": "column {n}", "fr": "colonne {n}"},
    "cell": {"en": "cell {n}", "fr": "case {n}"},
    "searched_exact": {"en": "exact", "fr": "exact"},
    "searched_depth": {"en": "depth {depth}", "fr": "profondeur {depth}"},
    # -- a game's board --
    "legend": {"en": "{piece} {side}: {name}", "fr": "{piece} {side} : {name}"},
    "versus": {"en": "{a} vs {b}", "fr": "{a} contre {b}"},
    "status_to_play": {"en": "Move {n} · {player} to play", "fr": "Coup {n} · à {player} de jouer"},
    "status_thinking": {
        "en": "Move {n} · {player} is thinking…",
        "fr": "Coup {n} · {player} réfléchit…",
    },
    "status_draw": {"en": "Draw after {moves}.", "fr": "Match nul après {moves}."},
    "status_resigned": {
        "en": "{loser} resigned after {moves}: {winner} wins.",
        "fr": "{loser} abandonne après {moves} : {winner} gagne.",
    },
    "status_forfeit": {
        "en": "{loser} forfeits (no move in time): {winner} wins.",
        "fr": "{loser} perd par forfait (pas de coup à temps) : {winner} gagne.",
    },
    "status_won": {"en": "{winner} wins after {moves}.", "fr": "{winner} gagne en {moves}."},
    "status_aborted": {
        "en": "Ended with no result after {moves}: {why} No rating or record changes.",
        "fr": "Partie arrêtée sans résultat après {moves} : {why} Ni classement ni bilan "
        "ne changent.",
    },
    "why_permissions": {
        "en": "plybot lost its permissions in this channel.",
        "fr": "plybot a perdu ses permissions dans ce salon.",
    },
    "why_no_workers": {
        "en": "plybot's engine went offline.",
        "fr": "le moteur de plybot s'est arrêté.",
    },
    "why_bot_failed": {
        "en": "plybot could not choose its move.",
        "fr": "plybot n'a pas pu choisir son coup.",
    },
    "one_move": {"en": "1 move", "fr": "1 coup"},
    "moves": {"en": "{n} moves", "fr": "{n} coups"},
    "board_moved": {
        "en": "This board moved: {link}",
        "fr": "Ce plateau a été déplacé : {link}",
    },
    "move_by": {"en": "Move <t:{t}:R> or forfeit.", "fr": "Jouez <t:{t}:R> ou perdez par forfait."},
    "last_move": {"en": "Last move: {move}", "fr": "Dernier coup : {move}"},
    "game_footer": {"en": "game {id}", "fr": "partie {id}"},
    "button_resign": {"en": "Resign", "fr": "Abandonner"},
    "button_rematch": {"en": "Rematch", "fr": "Revanche"},
    # -- a challenge --
    "challenge_title": {"en": "{game} challenge", "fr": "Défi : {game}"},
    "challenge_line": {
        "en": "{a} challenges {b} to {game}.",
        "fr": "{a} lance un défi à {b} : {game}.",
    },
    "challenge_from": {
        "en": "Starting from `{notation}`.",
        "fr": "La partie part de la position `{notation}`.",
    },
    "challenge_first": {"en": "{mover} moves first.", "fr": "{mover} joue en premier."},
    "challenge_next": {"en": "{mover} moves next.", "fr": "{mover} joue le coup suivant."},
    "challenge_answer": {
        "en": "{b}: accept or decline <t:{t}:R>.",
        "fr": "{b} : acceptez ou refusez <t:{t}:R>.",
    },
    "challenge_declined": {"en": "{b} declined.", "fr": "{b} a refusé."},
    "challenge_withdrawn": {"en": "{a} withdrew the challenge.", "fr": "{a} a retiré le défi."},
    "challenge_expired": {
        "en": "Expired: {b} did not answer in time.",
        "fr": "Expiré : {b} n'a pas répondu à temps.",
    },
    "challenge_accepted": {"en": "{b} accepted.", "fr": "{b} a accepté."},
    "challenge_footer": {"en": "challenge {id}", "fr": "défi {id}"},
    "button_accept": {"en": "Accept", "fr": "Accepter"},
    "button_decline": {"en": "Decline", "fr": "Refuser"},
    # -- announcements in a game's channel --
    "announce_declined": {
        "en": "{who} declined the challenge.",
        "fr": "{who} a refusé le défi.",
    },
    "announce_withdrawn": {
        "en": "{who} withdrew the challenge.",
        "fr": "{who} a retiré son défi.",
    },
    "announce_expired": {
        "en": "The challenge to {who} expired unanswered.",
        "fr": "Le défi lancé à {who} a expiré sans réponse.",
    },
    "turn_ping": {
        "en": "{who}, your move in {game} (move {n}, before <t:{t}:t>).",
        "fr": "{who}, à vous de jouer ({game}, coup {n}, avant <t:{t}:t>).",
    },
    "move_warning": {
        "en": "{who}, your {game} game is waiting for your move: you forfeit <t:{t}:R> "
        "without one.",
        "fr": "{who}, votre partie ({game}) attend votre coup : sans coup, vous perdez par "
        "forfait <t:{t}:R>.",
    },
    "result_draw": {
        "en": "{game}: {a} and {b} drew after {moves}.",
        "fr": "{game} : {a} et {b} font match nul après {moves}.",
    },
    "result_resigned": {
        "en": "{game}: {loser} resigned; {winner} wins.",
        "fr": "{game} : {loser} abandonne ; {winner} gagne.",
    },
    "result_forfeit": {
        "en": "{game}: {loser} forfeits (no move in time); {winner} wins.",
        "fr": "{game} : {loser} perd par forfait (pas de coup à temps) ; {winner} gagne.",
    },
    "result_won": {
        "en": "{game}: {winner} beat {loser} in {moves}.",
        "fr": "{game} : {winner} bat {loser} en {moves}.",
    },
    "result_ratings": {
        "en": "{result} Ratings: {ratings}",
        "fr": "{result} Classements : {ratings}",
    },
    "resigned": {"en": "Resigned.", "fr": "Partie abandonnée."},
    "announce_aborted": {
        "en": "{game}: the game of {a} and {b} ended with no result: {why} It counts in no "
        "rating or record; Rematch starts a new one.",
        "fr": "{game} : la partie de {a} et {b} s'arrête sans résultat : {why} Elle ne compte "
        "ni au classement ni au bilan ; Revanche en lance une nouvelle.",
    },
    # -- /analyze --
    "analysis_title": {"en": "Analysis · {game}", "fr": "Analyse · {game}"},
    "analysis_field": {"en": "plybot says", "fr": "L'avis de plybot"},
    "analysis_heading": {
        "en": "{game} at {where}, {side} to move:",
        "fr": "{game}, {where}, {side} au trait :",
    },
    "analysis_at_start": {"en": "the start", "fr": "position de départ"},
    "analysis_at": {"en": "`{notation}`", "fr": "position `{notation}`"},
    "analysis_best": {
        "en": "**Best move {move}**: {verdict}.",
        "fr": "**Meilleur coup {move}** : {verdict}.",
    },
    "analysis_line_whole": {"en": "Best play: {line}", "fr": "Meilleur jeu : {line}"},
    "analysis_line_begins": {
        "en": "Best play begins: {line}",
        "fr": "Le meilleur jeu commence par : {line}",
    },
    "analysis_every": {"en": "Every move: {scores}", "fr": "Chaque coup : {scores}"},
    "analysis_key": {
        "en": "(+ wins, 0 draws, - loses; the bigger, the sooner)",
        "fr": "(+ gagne, 0 nul, - perd ; plus le nombre est grand, plus c'est rapide)",
    },
    "analysis_solved": {"en": "Solved exactly in {time}.", "fr": "Résolu exactement en {time}."},
    "analysis_unsolved": {
        "en": "Not solved: looked {depth} moves ahead in {time}.",
        "fr": "Non résolu : {depth} coups examinés à l'avance en {time}.",
    },
    "verdict_even": {"en": "unclear, looks even", "fr": "incertain, semble équilibré"},
    "verdict_better": {
        "en": "unclear, looks better for {side}",
        "fr": "incertain, semble meilleur pour {side}",
    },
    "verdict_draw": {"en": "a draw with best play", "fr": "nul avec le meilleur jeu"},
    "verdict_wins": {
        "en": "{winner} wins, with best play",
        "fr": "{winner} gagne, avec le meilleur jeu",
    },
    "verdict_wins_at": {
        "en": "{winner} wins with its {nth} move from now, with best play",
        "fr": "{winner} gagne à son {nth} coup à partir d'ici, avec le meilleur jeu",
    },
    # -- /stats and /leaderboard --
    "stats_title": {"en": "plybot stats", "fr": "Statistiques plybot"},
    "stats_vs_bot": {
        "en": "**Against plybot** (won / drawn / lost)",
        "fr": "**Contre plybot** (gagnées / nulles / perdues)",
    },
    "stats_vs_people": {
        "en": "**Against people** (rating, won / drawn / lost)",
        "fr": "**Contre des membres** (classement, gagnées / nulles / perdues)",
    },
    "stats_none": {"en": "No finished games yet.", "fr": "Aucune partie terminée pour l'instant."},
    "leaderboard_title": {"en": "{game} leaderboard", "fr": "Classement : {game}"},
    "leaderboard_empty": {
        "en": "No rated {game} games between people here yet.",
        "fr": "Pas encore de partie classée entre membres ici ({game}).",
    },
    "leaderboard_row": {
        "en": "{rank}. {who}: {rating} ({games})",
        "fr": "{rank}. {who} : {rating} ({games})",
    },
    "one_game": {"en": "1 game", "fr": "1 partie"},
    "games": {"en": "{n} games", "fr": "{n} parties"},
    # -- /help --
    "help": {
        "en": "**/connect4** `[opponent] [level] [first] [position]`: play Connect Four against "
        "plybot (levels easy, medium, hard, perfect), or challenge `opponent`.\n"
        "**/tictactoe** `[opponent] [level] [first] [position]`: the same for tic-tac-toe.\n"
        "**/analyze** `game position`: every move's exact score, the best move and its line "
        "(position: the moves so far, e.g. `4453`).\n"
        "**/resign**: resign your game in this channel (or withdraw your challenge).\n"
        "**/stats** `[user]`: results against plybot per level, and the rating between people.\n"
        "**/leaderboard** `[game]`: the best-rated players here.\n"
        "Press a column (or cell) button to move. A game without a move for a while is "
        "forfeited by the player to move.",
        "fr": "**/connect4** `[opponent] [level] [first] [position]` : jouer à Puissance 4 "
        "contre plybot (niveaux easy, medium, hard, perfect), ou défier `opponent`.\n"
        "**/tictactoe** `[opponent] [level] [first] [position]` : de même pour le morpion.\n"
        "**/analyze** `game position` : le score exact de chaque coup, le meilleur coup et sa "
        "suite (position : les coups joués, par ex. `4453`).\n"
        "**/resign** : abandonner votre partie dans ce salon (ou retirer votre défi).\n"
        "**/stats** `[user]` : les résultats contre plybot par niveau, et le classement entre "
        "membres.\n"
        "**/leaderboard** `[game]` : les membres les mieux classés ici.\n"
        "Appuyez sur le bouton d'une colonne (ou d'une case) pour jouer. Une partie restée "
        "trop longtemps sans coup est perdue par forfait par le joueur au trait.",
    },
    # -- slash commands' descriptions (their names and options' names stay as they are) --
    "cmd_connect4": {
        "en": "Play Connect Four against plybot, or challenge someone.",
        "fr": "Jouer à Puissance 4 contre plybot, ou défier quelqu'un.",
    },
    "cmd_tictactoe": {
        "en": "Play tic-tac-toe against plybot, or challenge someone.",
        "fr": "Jouer au morpion contre plybot, ou défier quelqu'un.",
    },
    "cmd_analyze": {
        "en": "Every move's score, the best move and its line.",
        "fr": "Le score de chaque coup, le meilleur coup et sa suite.",
    },
    "cmd_resign": {
        "en": "Resign your game in this channel (or withdraw your challenge).",
        "fr": "Abandonner votre partie dans ce salon (ou retirer votre défi).",
    },
    "cmd_board": {
        "en": "Show your game in this channel again, at the bottom.",
        "fr": "Réafficher votre partie de ce salon, tout en bas.",
    },
    "cmd_stats": {
        "en": "Results against plybot per level, and the rating between people.",
        "fr": "Résultats contre plybot par niveau, et classement entre membres.",
    },
    "cmd_leaderboard": {
        "en": "The best-rated players in this server.",
        "fr": "Les membres les mieux classés de ce serveur.",
    },
    "cmd_settings": {
        "en": "This server's plybot settings (Manage Server to change).",
        "fr": "Les réglages de plybot sur ce serveur (Gérer le serveur pour les changer).",
    },
    "cmd_help": {"en": "How to play plybot.", "fr": "Comment jouer avec plybot."},
    "opt_opponent": {
        "en": "Challenge this member (leave empty to play plybot)",
        "fr": "Défier ce membre (vide : jouer contre plybot)",
    },
    "opt_level": {
        "en": "plybot's strength (default medium; not for games against a member)",
        "fr": "La force de plybot (medium par défaut ; pas contre un membre)",
    },
    "opt_first": {
        "en": "Who moves first (default: you)",
        "fr": "Qui joue en premier (vous par défaut)",
    },
    "opt_position_connect4": {
        "en": "Start from these moves, e.g. 4453",
        "fr": "Partir de ces coups, par ex. 4453",
    },
    "opt_position_tictactoe": {
        "en": "Start from these moves (cells 1-9), e.g. 51",
        "fr": "Partir de ces coups (cases 1 à 9), par ex. 51",
    },
    "opt_game": {"en": "The game", "fr": "Le jeu"},
    "opt_position_analyze": {
        "en": "The moves so far, e.g. 4453 (empty: the start)",
        "fr": "Les coups joués, par ex. 4453 (vide : le départ)",
    },
    "opt_user": {
        "en": "Whose stats (default: yours)",
        "fr": "Les statistiques de qui (les vôtres par défaut)",
    },
    "opt_leaderboard_game": {
        "en": "Which game (default Connect Four)",
        "fr": "Quel jeu (Puissance 4 par défaut)",
    },
    "opt_default_level": {
        "en": "plybot's default strength here",
        "fr": "La force de plybot par défaut ici",
    },
    "opt_move_timeout": {
        "en": "Minutes a player has for a move before forfeiting (1 to 10080)",
        "fr": "Minutes pour jouer un coup avant de perdre par forfait (1 à 10080)",
    },
    "opt_channel": {
        "en": "The one channel where games are played",
        "fr": "Le seul salon où se jouent les parties",
    },
    "opt_any_channel": {
        "en": "Allow games in every channel again",
        "fr": "Autoriser de nouveau les parties dans tous les salons",
    },
    "opt_language": {
        "en": "The language of boards and announcements here",
        "fr": "La langue des plateaux et des annonces ici",
    },
    "choice_language_auto": {
        "en": "The server's Discord language",
        "fr": "La langue du serveur dans Discord",
    },
}


def language(locale: object) -> str:
    """The shipped language for a Discord locale (``fr``, ``en-US``, a ``discord.Locale``)."""
    code = str(getattr(locale, "value", locale) or "").split("-")[0].lower()
    return code if code in LANGUAGES else LANGUAGES[0]


def ordinal(n: int, lang: str = "en") -> str:
    """``n`` as an ordinal number in ``lang``: ``18th``, ``1st``; ``18e``, ``1er``."""
    if lang == "fr":
        return "1er" if n == 1 else f"{n}e"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def decimal(x: float, digits: int, lang: str = "en") -> str:
    """``x`` with ``digits`` decimals, with ``lang``'s decimal mark (``1.5``, ``1,5``)."""
    text = f"{x:.{digits}f}"
    return text.replace(".", ",") if lang == "fr" else text


def say(key: str, lang: str = "en", **params: Any) -> str:
    """The reply ``key`` in ``lang`` (English where it has no translation), filled in."""
    texts = STRINGS[key]
    return texts.get(lang, texts[LANGUAGES[0]]).format(**params)

"""plybot's Discord bot: Connect Four and tic-tac-toe against plybot or each other, in a channel.

One concern per module:

* :mod:`bot.service` — what the bot does, as plain async functions over Redis and the
  job client (no ``discord`` import): start, challenge, accept, press, resign, sweep,
  the bot's moves, analysis, stats. Returns what to show.
* :mod:`bot.render` — boards, analyses and stats as text and embeds (pure functions).
* :mod:`bot.views` — the persistent buttons (``DynamicItem``; the ``custom_id`` carries
  the game id), which hand each press to the cog.
* :mod:`bot.cog` — the slash commands and button handlers: a thin Discord layer.
* :mod:`bot.app` — the ``commands.Bot``: Redis, buttons, cog and command sync at start.
* :mod:`bot.cli` — ``plybot bot``.
* :mod:`bot.limits`, :mod:`bot.stats`, :mod:`bot.challenges`, :mod:`bot.keys` — the
  limits (Lua), results and Elo ratings (settled once, in Lua), open challenges, and
  the Redis keys, all under one prefix.

Nothing is imported here, so ``plybot --help`` does not pay for discord.py.
"""

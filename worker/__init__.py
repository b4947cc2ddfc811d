"""plybot's worker package, in three parts that import one way:

* :mod:`worker.core`: the service core that ``api/`` and ``bot/`` use: the job contract,
  the client, the job-kind table, games and bot moves, settings, Redis keys, the position
  cache and the job store. It imports ``engine/`` and nothing else of plybot.
* :mod:`worker.process`: the worker processes (runner, jobs, supervisor, ``plybot up``,
  ``plybot worker``, the book build), on top of the core.
* :mod:`worker.bench`: benchmarks and operators' tools (``plybot loadtest``,
  ``plybot analysisbench``, ``plybot chaos``, the cache figure), on top of both.

Nothing is imported here: ``import worker.core.keys`` loads no Redis client, no pydantic
and no engine. ``tests/test_layers.py`` checks the arrows.
"""

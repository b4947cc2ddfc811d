"""The worker processes: :mod:`~worker.process.runner` (one warm worker),
:mod:`~worker.process.jobs` (the job functions), :mod:`~worker.process.supervisor`,
:mod:`~worker.process.processes` and :mod:`~worker.process.redis_server` (child processes),
the book build, and the ``plybot worker``, ``up`` and ``book`` commands (:mod:`.cli`).

Imports :mod:`worker.core` and ``engine/``; ``api/`` and ``bot/`` never import it.
Nothing is imported here.
"""

"""The service core: what ``api/`` and ``bot/`` import of ``worker/``.

:mod:`~worker.core.contract` (requests, results, job states), :mod:`~worker.core.kinds`
(the job kinds), :mod:`~worker.core.client` (submit, wait, cancel), :mod:`~worker.core.games`
and :mod:`~worker.core.bot_moves` (game sessions), :mod:`~worker.core.settings`,
:mod:`~worker.core.keys`, :mod:`~worker.core.position_cache`, :mod:`~worker.core.jobstore`.
It never imports :mod:`worker.process` or :mod:`worker.bench`. Nothing is imported here.
"""

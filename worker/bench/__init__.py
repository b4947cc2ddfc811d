"""Benchmarks and operators' tools, shipped beside the service but never imported by it:
``plybot loadtest`` (:mod:`~worker.bench.loadtest`), ``plybot analysisbench``
(:mod:`~worker.bench.analysis_bench`), ``plybot chaos`` (:mod:`~worker.bench.chaos`) and
``python -m worker.bench.cache_bench`` (the cache figure, over HTTP only).

They drive a service from outside (HTTP, Redis, child processes), so they may import
:mod:`worker.core` and :mod:`worker.process`; nothing imports them. Nothing is imported here.
"""

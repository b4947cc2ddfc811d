"""The job function of an analysis answered at submission, from the shared position cache.

The submitter found the exact answer in the cache (:mod:`worker.core.client`) and has RQ
run this function at once, in its own process (a queue with ``is_async=False``): the job
is then an ordinary finished RQ job whose return value is that answer, so RQ's tools and
``Job.fetch(id).return_value()`` see it like any other.
"""

from __future__ import annotations

from typing import Any

__all__ = ["answered"]


def answered(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The answer found for ``request`` (JSON, as the contract's ``AnalysisResult``)."""
    del request  # kept in RQ's record: what was asked
    return answer

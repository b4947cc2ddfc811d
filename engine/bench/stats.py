"""The one quantile every benchmark of plybot reports (its medians are ``statistics.median``)."""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["quantile"]


def quantile(values: Iterable[float], q: float) -> float:
    """The ``q`` quantile (``0 <= q <= 1``) of ``values`` by nearest rank: the smallest value
    with at least ``q`` of them at or below it (p99 of 100 values: the 99th smallest). NaN
    for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

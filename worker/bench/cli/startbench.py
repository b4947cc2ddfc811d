"""Time how soon `plybot up` serves: Redis ready, each worker serving, the service up.

usage: plybot startbench [--runs 5] [--workers 2]

Each run starts ``plybot up`` as a fresh ``make up`` does (an embedded Redis in a new data
folder), timestamps its log line by line, and stops it. Prints one line per run and the
medians: when the job Redis answered, when the last worker served, the time between the
two, and when ``plybot up`` said it was up (seconds since it was started).
"""

from __future__ import annotations

import argparse

from engine.cli.analyze import ArgumentParser


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': a whole number of at least 1")
    return int(text)


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="plybot startbench", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=_count, default=5, help="starts to time (default 5)")
    p.add_argument("--workers", type=_count, default=2, help="workers of plybot up (default 2)")
    args = p.parse_args(argv)
    from worker.bench.startup import format_runs, measure_startup

    runs = []
    for i in range(args.runs):
        run = measure_startup(args.workers)
        print(f"run {i + 1}: last worker serving {run.after_redis_s:.3f} s after Redis", flush=True)
        runs.append(run)
    print(format_runs(runs))
    return 0

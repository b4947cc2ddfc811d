"""Load-test the service: throughput, latency and queue overhead, 1 vs 2 workers.

usage: plybot loadtest [--requests N] [--concurrency C] [--set NAME] [--workers 1,2]
                       [--mode depth|solve|time] [--depth D] [--time-ms T] [--cache]
                       [--table-mb MB] [--warm-tables] [--probe-set NAME]

Starts its own Redis and workers for each worker count (REDIS_URL is not used),
sends N distinct positions of a benchmark set, and prints the table.

The default load is CPU-bound on purpose: exact solves of 40 distinct
Test_L1_R2 positions (the compiled solver, ~50 ms to a few s each, most
100-500 ms, pure CPU), at concurrency 4 (a job always waits for each worker), the
shared cache off (every worker does the full work), solver tables of 16 MB
per worker (two 64 MB tables thrash the shared L3 cache of this 2-core machine),
cleared before each job (a solve's cost depends a lot on what the table holds:
with tables kept, which worker ran which jobs before would decide the ratio).
The queue's own overhead is measured apart, on 40 small exact solves of
``--probe-set`` (Test_L2_R2, a few ms each) sent with a worker always free.
"""

from __future__ import annotations

import argparse
import sys

from engine.vocabulary import MODES


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': worker counts like 1,2") from None
    if not counts or any(not 1 <= n <= 16 for n in counts):
        raise argparse.ArgumentTypeError(f"'{text}': worker counts between 1 and 16")
    return counts


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}': must be at least 1")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="plybot loadtest", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=_positive, default=40, help="requests per run")
    parser.add_argument("--concurrency", type=_positive, default=4, help="requests in flight")
    parser.add_argument("--set", default="Test_L1_R2", help="benchmark set (default Test_L1_R2)")
    parser.add_argument(
        "--probe-set",
        default="Test_L2_R2",
        help="set of the small jobs that measure the queue's overhead (default Test_L2_R2)",
    )
    parser.add_argument(
        "--table-mb",
        type=_positive,
        default=16,
        help="each worker's solver table, MB (PLYBOT_SOLVER_TABLE_MB; default 16)",
    )
    parser.add_argument("--workers", type=_counts, default=[1, 2], help="worker counts, e.g. 1,2")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="solve",
        help="solve (default: exact, checked against the set's scores), depth or time",
    )
    parser.add_argument("--depth", type=_positive, default=6, help="search depth (mode depth)")
    parser.add_argument("--time-ms", type=_positive, default=50, help="search time (mode time)")
    parser.add_argument("--cache", action="store_true", help="turn the shared cache on")
    parser.add_argument(
        "--warm-tables",
        action="store_true",
        help="keep each worker's solver table from job to job (as the service does); by "
        "default it is cleared before each job, so every job costs the same on 1 or 2 workers",
    )
    parser.add_argument("--log", action="store_true", help="show the workers' logs")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from worker.bench.loadtest import format_table, load_positions, run_load

    try:
        positions = load_positions(args.set, args.requests)
    except (FileNotFoundError, ValueError) as exc:
        print(f"plybot loadtest: --set {exc}", file=sys.stderr)
        return 2
    try:
        # The free-worker pass (overhead): the last 40 of the probe set, apart from the load.
        probe = load_positions(args.probe_set)[-40:]
    except (FileNotFoundError, ValueError) as exc:
        print(f"plybot loadtest: --probe-set {exc}", file=sys.stderr)
        return 2
    if len(positions) < args.requests:
        print(
            f"plybot loadtest: --set '{args.set}' has {len(positions)} positions, "
            f"fewer than --requests {args.requests}",
            file=sys.stderr,
        )
        return 2
    results = []
    for workers in args.workers:
        print(f"running {args.requests} requests on {workers} worker(s)...", flush=True)
        results.append(
            run_load(
                workers=workers,
                positions=positions,
                probe_positions=probe,
                probe_mode="solve",
                table_mb=args.table_mb,
                fresh_table=not args.warm_tables,
                concurrency=args.concurrency,
                mode=args.mode,
                depth=args.depth,
                time_ms=args.time_ms,
                cache=args.cache,
                log=args.log,
            )
        )
    what = {
        "depth": f"depth-{args.depth} search",
        "solve": "exact solve",
        "time": f"{args.time_ms} ms search",
    }[args.mode]
    description = (
        f"plybot loadtest: {args.requests} distinct positions of {args.set}, {what} each, "
        f"concurrency {args.concurrency}, shared cache {'on' if args.cache else 'off'}, "
        f"solver table {args.table_mb} MB per worker "
        f"({'kept' if args.warm_tables else 'cleared'} between jobs); "
        f"queue overhead on {len(probe)} exact solves of {args.probe_set}"
    )
    print()
    print(format_table(results, description))
    failed = any(r.lost or r.duplicated or r.wrong for r in results)
    return 1 if failed else 0

"""Benchmark exact analyses of every column over HTTP, by ply, on uniformly sampled positions.

usage: plybot analysisbench [--plies 0-20] [--per-ply 20] [--seed 1] [--url URL]
                            [--workers 2] [--perfect-per-ply 50]

Without ``--url`` it starts its own ``plybot up`` (a fresh embedded Redis, the
API on a free port, ``--workers`` warm workers) and stops it at the end. Prints
one line per position as it goes, then the table: per ply and overall, the
positions, how many were exact, and the median, p99 and longest time to the
exact analysis of every column. Then the ``perfect`` level's move time on
positions of plies 0..12 (in this process: the opening book, then the solver).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys

from engine.cli.analyze import ArgumentParser


def _plies(text: str) -> range:
    try:
        low, _, high = text.partition("-")
        plies = range(int(low), int(high or low) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': plies like 0-16 or 8") from None
    if not plies or plies.start < 0 or plies.stop > 42:
        raise argparse.ArgumentTypeError(f"'{text}': plies within 0..41")
    return plies


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}': a whole number")
    return int(text)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="plybot analysisbench", description=__doc__.splitlines()[0])
    p.add_argument("--plies", type=_plies, default=range(0, 21), help="plies (default 0-20)")
    p.add_argument("--per-ply", type=_count, default=20, help="positions per ply (default 20)")
    p.add_argument("--seed", type=int, default=1, help="seed of the sample (default 1)")
    p.add_argument("--url", default=None, help="a running API (default: start plybot up)")
    p.add_argument("--workers", type=_count, default=2, help="workers of plybot up (default 2)")
    p.add_argument(
        "--perfect-per-ply",
        type=_count,
        default=50,
        help="perfect moves per ply 0..12 (default 50)",
    )
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from engine.bench.stats import quantile
    from worker.bench.analysis_bench import (
        format_table,
        perfect_move_times,
        run_bench,
        start_service,
        wait_ready,
    )
    from worker.process.redis_server import free_port

    process = None
    url = args.url
    if url is None:
        port = free_port()
        process, log = start_service(args.workers, port)
        url = f"http://127.0.0.1:{port}"
        print(f"plybot up on {url}, {args.workers} workers, fresh Redis (log: {log})", flush=True)
    try:
        wait_ready(url, args.workers if process is not None else 1)

        def say(ply: int, notation: str, seconds: float, exact: bool) -> None:
            mark = "" if exact else "  NOT EXACT"
            print(
                f"ply {ply:>2}  {notation or '-':<18} {seconds * 1000:>10.1f} ms{mark}", flush=True
            )

        figures = run_bench(url, args.plies, args.per_ply, args.seed, on_result=say)
    finally:
        if process is not None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=120)
    print()
    print("time to an exact analysis of every column (HTTP, one request at a time):")
    print(format_table(figures))
    if args.perfect_per_ply:
        times, inexact = perfect_move_times(range(0, 13), args.perfect_per_ply, args.seed)
        print(
            f"\nperfect, plies 0-12, {len(times)} moves: median "
            f"{statistics.median(times) * 1000:.2f} ms, p99 {quantile(times, 0.99) * 1000:.2f} ms, "
            f"max {max(times) * 1000:.1f} ms, not exact within 10 s: {len(inexact)}"
        )
    misses = sum(len(f.not_exact) for f in figures)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

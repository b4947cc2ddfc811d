"""The root driver: narrowing a position's bounds with null-window searches (Pons' ``solve``).

The driver keeps ``lo <= s <= hi`` for the root's exact score ``s`` and asks
the node search one yes/no question at a time: "is ``s > med``?" (a search
with the window ``(med, med + 1)``). The answer moves ``lo`` up or ``hi``
down. ``med`` halves the interval but, as in Pons' solver, is never closer to
0 than half-way to the bound on its side: questions far from 0 are answered
in few nodes and leave bounds in the table for the costly ones near ``s``.
Early in the game (wide windows) the question goes further out, 7/8 of the
way: on Pons' sets that saves 65% of the nodes on Test_L1_R1 and 10% on
Test_L1_R2 (and costs about 6% on a sample of Test_L1_R3, whose scores are
close to 0). A weak solve only needs the sign: it asks "``s > 0``?" and then,
if not, "``s > -1``?".

Every question leaves its proven bounds in the table, so the next question
(and the next solve) starts from them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.solver.bitboard import U1, alignment, possible, winning_cells
from engine.solver.negamax import search
from engine.solver.table import canonical, lower_of, move_of, oriented, probe, upper_of

#: How far towards its side's bound a question is kept, in eighths (Pons: half way).
REACH = 4
#: ... in the first 5/14 of the game (fewer than 15 stones on 7x6), where windows are wide.
EARLY_REACH = 7

#: Column score of a full column in analysis output.
FULL = -128

# Status of one position of a batch.
OK = 0
BAD_CHARACTER = 1  # not a digit 1..9
OUT_OF_RANGE = 2  # a column digit beyond the board's width
COLUMN_FULL = 3
MOVE_AFTER_END = 4  # moves after a win or a full board
GAME_OVER = 5  # the position itself is finished
ABORTED = 6  # the deadline or node limit came first


@njit
def _part(x, eighths):
    """``x * eighths / 8`` rounded towards 0."""
    return (eighths * x) // 8 if x >= 0 else -((-eighths * x) // 8)


@njit
def settled(lo, hi, weak):
    """True once the bounds answer the question (the score, or for ``weak`` its sign)."""
    if lo >= hi:
        return True
    if weak:
        return lo >= 1 or hi <= -1 or (lo >= 0 and hi <= 0)
    return False


@njit
def first_column(bits, order, colmask):
    """The first column in ``order`` with a cell in ``bits``, or -1."""
    for k in range(order.shape[0]):
        if bits & colmask[order[k]]:
            return np.int64(order[k])
    return np.int64(-1)


@njit
def root_init(geo, table, layout, cur, mask, ply):
    """Initial ``(lo, hi, best)`` of an unfinished position, from rules and the table.

    Settled at once (``lo == hi``) for an immediate win or a full board.
    ``best`` is a column known to reach ``lo``, or -1.
    """
    width, h1, bottom, board, cells, max_stones, kmask, order, colmask = geo
    if ply >= cells:
        return np.int64(0), np.int64(0), np.int64(-1)
    moves = possible(mask, bottom, board)
    wins = winning_cells(cur, mask, h1, board) & moves
    if wins != 0:
        score = np.int64(max_stones - ply // 2)
        return score, score, first_column(wins, order, colmask)
    lo = np.int64(-(max_stones - (ply + 1) // 2))  # the opponent wins at its next move
    hi = np.int64(max_stones - 1 - ply // 2)  # we win at our move after next
    best = np.int64(-1)
    key, flipped = canonical(cur + mask, cells - ply, layout, width, h1)
    entry = probe(table, key, cells - ply, layout, kmask)
    if entry != 0:
        if lower_of(entry) > lo and move_of(entry) >= 0:  # only with the move that proves it
            lo = lower_of(entry)
            best = oriented(move_of(entry), flipped, width)
        hi = min(hi, upper_of(entry))
    return lo, hi, best


@njit
def root_step(geo, table, layout, ws, cur, mask, ply, lo, hi, best, weak, limits, counters):
    """One null-window question; returns the new ``(lo, hi, best, aborted)``.

    Precondition: not ``settled(lo, hi, weak)``, and ``(lo, hi, best)`` came
    from :func:`root_init` and earlier steps on this position.
    """
    if weak:
        med = np.int64(0) if (hi >= 1 and lo <= 0) else np.int64(-1)
    else:
        med = lo + (hi - lo) // 2
        cells = geo[4]
        reach = EARLY_REACH if ply * 14 < cells * 5 else REACH
        if med <= 0 and _part(lo, reach) < med:
            med = _part(lo, reach)
        elif med >= 0 and _part(hi, reach) > med:
            med = _part(hi, reach)
    value, aborted, column = search(
        geo, table, layout, ws, cur, mask, ply, med, med + 1, limits, counters
    )
    if aborted:
        return lo, hi, best, True
    if value <= med:
        hi = min(hi, value)
    else:
        lo = max(lo, value)
        if column >= 0:
            best = column
    return lo, hi, best, False


@njit
def fallback_move(geo, cur, mask):
    """A best move when no search named one: the first move that does not lose at once.

    The driver only lacks a move when the score is the bound every such move
    reaches (the earliest loss, or a draw with the board nearly full), so any
    of them is best; if all lose at once, any legal move is.
    """
    _, h1, bottom, board, _, _, _, order, colmask = geo
    moves = possible(mask, bottom, board)
    threats = winning_cells(cur ^ mask, mask, h1, board)
    forced = moves & threats
    safe = (forced if forced != 0 else moves) & ~(threats >> U1)
    if safe != 0:
        return first_column(safe, order, colmask)
    return first_column(moves, order, colmask)


@njit
def solve_position(geo, table, layout, ws, cur, mask, ply, weak, limits, counters):
    """Narrow until settled; returns ``(lo, hi, best, aborted)`` in score units."""
    lo, hi, best = root_init(geo, table, layout, cur, mask, ply)
    aborted = False
    while not settled(lo, hi, weak):
        lo, hi, best, aborted = root_step(
            geo, table, layout, ws, cur, mask, ply, lo, hi, best, weak, limits, counters
        )
        if aborted:
            break
    if best < 0 and not aborted and ply < geo[4]:
        best = fallback_move(geo, cur, mask)
    return lo, hi, best, aborted


@njit
def weak_value(lo, hi):
    """The sign of a score that ``settled(lo, hi, True)``: 1, 0 or -1."""
    if lo >= 1:
        return np.int64(1)
    if hi <= -1:
        return np.int64(-1)
    return np.int64(0)


@njit
def analyze_position(geo, table, layout, ws, cur, mask, ply, weak, limits, counters, out):
    """Score every column into ``out`` (``FULL`` for a full column); returns ``(best, aborted)``.

    A column's score is minus the exact score of the position after it (or
    the immediate win); with ``weak``, its sign.
    """
    width, h1, bottom, board, _, max_stones, _, order, colmask = geo
    moves = possible(mask, bottom, board)
    wins = winning_cells(cur, mask, h1, board) & moves
    for column in range(width):
        out[column] = FULL
    best = np.int64(-1)
    for k in range(width):
        column = order[k]
        move = moves & colmask[column]
        if move == 0:
            continue
        if wins & move:
            score = np.int64(max_stones - ply // 2)
            if weak:
                score = np.int64(1)
        else:
            lo, hi, _, aborted = solve_position(
                geo, table, layout, ws, cur ^ mask, mask | move, ply + 1, weak, limits, counters
            )
            if aborted:
                return best, True
            score = -weak_value(lo, hi) if weak else -lo
        out[column] = score
        if best < 0 or score > out[best]:
            best = np.int64(column)
    return best, False


@njit
def parse_moves(geo, buf, start, end):
    """Play the column digits ``buf[start:end]``; returns ``(cur, mask, ply, status)``.

    ``status`` is ``OK`` for an unfinished position, else why not (the
    position is then only good for an error message, made by
    :meth:`engine.connect4.Connect4.parse`).
    """
    width, h1, bottom, _, cells, _, _, _, colmask = geo
    cur = np.uint64(0)
    mask = np.uint64(0)
    ply = 0
    over = False
    for p in range(start, end):
        char = np.int64(buf[p])
        if char < 49 or char > 57:
            return cur, mask, ply, BAD_CHARACTER
        column = char - 49
        if column >= width:
            return cur, mask, ply, OUT_OF_RANGE
        if over:
            return cur, mask, ply, MOVE_AFTER_END
        top = colmask[column] & ~(colmask[column] >> U1)
        if mask & top:
            return cur, mask, ply, COLUMN_FULL
        cur ^= mask
        mask |= mask + (bottom & colmask[column])
        ply += 1
        if alignment(cur ^ mask, h1) or ply == cells:
            over = True
    if over:
        return cur, mask, ply, GAME_OVER
    return cur, mask, ply, OK

"""The node search: negamax with alpha-beta over bitboards, iterative (an explicit stack).

Scores follow Pons (and :mod:`engine.game`): from the side to move,
``max_stones + 1 - stones`` of the winner at the win, negative for a loss, 0
for a draw. With ``n`` stones on the board and no immediate win:

* the side to move wins at once with ``max_stones - n // 2``;
* if every move lets the opponent win at once it scores ``-(max_stones - (n + 1) // 2)``;
* otherwise (it has a move that does not lose at once) the score lies in
  ``[-(max_stones - 1 - (n + 1) // 2), max_stones - 1 - n // 2]``.

Contract of :func:`search`, for a window ``alpha < beta`` (fail-hard, as Pons):

* precondition: the side to move cannot win at once;
* returns ``v`` with ``s <= v <= alpha`` if ``s <= alpha``, ``beta <= v <= s``
  if ``s >= beta``, and ``v == s`` otherwise (``s`` = the exact score);
* on the way, stores in the table only bounds proven by finished subtrees, so
  an aborted search (deadline, node limit) leaves the table correct.

Per node: count it; find the opponent's winning cells; prune to the moves
that do not lose at once (if the opponent has two threats we can reach, or
every move plays under one of its winning cells, the node is lost); narrow
the window by the static bounds above and by the table; where the children
live in the table's main region, prefetch their buckets and cut off at once
if one of them is already known to refute the window (enhanced transposition
cut-off); then try the moves, best first (:mod:`engine.solver.movesorter`),
each child inheriting the threats its parent computed while ordering. A null window (``beta = alpha
+ 1``) makes every node a yes/no question, which is what the root driver asks.

The recursion runs on an explicit stack (arrays indexed by the distance
``d`` from the root) so the compiled loop makes no calls and can stop at once
when the clock or the node budget runs out.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.solver.bitboard import U1, winning_cells
from engine.solver.intrinsics import bit_length, ctz, monotonic
from engine.solver.movesorter import RACE_TO_SURVIVE, RACE_TO_WIN, order_moves
from engine.solver.table import (
    canonical,
    lower_of,
    move_of,
    oriented,
    prefetch_slot,
    probe,
    store,
    upper_of,
)

#: The clock and the node limit are checked once every this many nodes (~0.2 ms).
CHECK_EVERY = 1024

# What the loop does next at depth ``d``.
_ENTER = 0  # evaluate the node fc[d], fm[d] with window (fa[d], fb[d])
_NEXT = 1  # search the next move of node d
_RETURN = 2  # node d is finished with value ``ret``: hand it to its parent

#: Bounds passed to ``store`` for "unknown" (clamped there).
NO_LOWER = -99
NO_UPPER = 99


@njit
def workspace(width, cells):
    """The explicit stack: one frame per ply below the root, plus one."""
    depth = cells + 2
    return (
        np.zeros(depth, dtype=np.uint64),  # fc: current
        np.zeros(depth, dtype=np.uint64),  # fm: mask
        np.zeros(depth, dtype=np.int64),  # fa: alpha
        np.zeros(depth, dtype=np.int64),  # fb: beta
        np.zeros(depth, dtype=np.int64),  # f0: alpha once the node was entered
        np.zeros(depth, dtype=np.int64),  # fn: number of moves
        np.zeros(depth, dtype=np.int64),  # fi: next move to try
        np.zeros(depth, dtype=np.int64),  # fbest: column that raised alpha, or -1
        np.zeros(depth, dtype=np.int64),  # fw: node count on entry
        np.zeros((depth, width), dtype=np.uint64),  # fmv: moves, best first
        np.zeros((depth, width), dtype=np.uint64),  # fmade: the mover's winning cells after each
        np.zeros(depth, dtype=np.uint64),  # ft: the opponent's winning cells (from the parent)
        np.zeros(depth, dtype=np.uint64),  # fk: the key the node's entry is filed under
        np.zeros(depth, dtype=np.bool_),  # ff: ... which is its mirror image's
        np.zeros(width, dtype=np.int64),  # scores, while sorting one node's moves
    )


@njit
def search(geo, table, layout, ws, cur0, mask0, ply0, alpha, beta, limits, counters):
    """Negamax of ``(cur0, mask0)`` (``ply0`` stones) in ``(alpha, beta)``; see the module doc.

    ``limits`` = ``(node_limit, deadline)``: stop when ``counters[0]`` (the
    node count, carried across calls) passes the first or ``monotonic()``
    passes the second. Returns ``(value, aborted, best)``: ``best`` is the
    root column that raised alpha or cut off, or -1. An aborted search's
    value means nothing.
    """
    width, h1, bottom, board, cells, max_stones, kmask, order, colmask = geo
    fc, fm, fa, fb, f0, fn, fi, fbest, fw, fmv, fmade, ft, fk, ff, scores = ws
    node_limit = np.int64(limits[0])
    nodes = counters[0]
    next_check = nodes + 1  # check at the first node: a deadline may be past already

    d = 0
    fc[0] = cur0
    fm[0] = mask0
    fa[0] = alpha
    fb[0] = beta
    fbest[0] = -1
    mode = _ENTER
    ret = 0
    aborted = False
    while True:
        if mode == _ENTER:
            nodes += 1
            if nodes >= next_check:
                # limits[1] is read afresh: another thread may move the deadline to now
                # (Solver.interrupt), and the search returns within CHECK_EVERY nodes.
                if nodes > node_limit or monotonic() >= limits[1]:
                    aborted = True
                    break
                next_check = min(nodes + CHECK_EVERY, node_limit + 1)
            cur = fc[d]
            msk = fm[d]
            a = fa[d]
            b = fb[d]
            n = ply0 + d
            mode = _RETURN
            possible = (msk + bottom) & board
            threats = winning_cells(cur ^ msk, msk, h1, board) if d == 0 else ft[d]
            forced = possible & threats
            if forced != 0:
                if forced & (forced - U1) != 0:  # two threats to parry at once
                    ret = -(max_stones - (n + 1) // 2)
                    continue
                possible = forced
            safe = possible & ~(threats >> U1)  # never play right under an opponent's win
            if safe == 0:
                ret = -(max_stones - (n + 1) // 2)
                continue
            if n >= cells - 2:  # we play, the opponent plays the last cell: nobody can win
                ret = 0
                continue
            lo = -(max_stones - 1 - (n + 1) // 2)
            if a < lo:
                a = lo
                if a >= b:
                    ret = a
                    continue
            hi = max_stones - 1 - n // 2
            if b > hi:
                b = hi
                if a >= b:
                    ret = b
                    continue
            empty = cells - n
            key, flipped = canonical(cur + msk, empty, layout, width, h1)
            fk[d] = key
            ff[d] = flipped
            entry = probe(table, key, empty, layout, kmask)
            tt_move = -1
            if entry != 0:
                tt_move = oriented(move_of(entry), flipped, width)
                if d > 0:  # the root's bounds are the driver's business; it wants a move
                    known = lower_of(entry)
                    if known > a:
                        a = known
                        if a >= b:
                            ret = a
                            continue
                    up = upper_of(entry)
                    if up < b:
                        b = up
                        if a >= b:
                            ret = b
                            continue
            base = (cur ^ msk) + msk  # a child's key is base + its move
            if empty - 1 > layout[3]:  # the children's buckets are in main memory:
                # ask for all of them now, so that the misses overlap
                rest = safe
                while rest != 0:
                    bit = rest & (~rest + U1)
                    child_key = canonical(base + bit, empty - 1, layout, width, h1)[0]
                    prefetch_slot(table, child_key, empty - 1, layout, kmask)
                    rest ^= bit
            if d > 0 and empty - 1 > layout[5]:
                # enhanced transposition cut-off: a child already known bad enough
                rest = safe
                cut = False
                while rest != 0:
                    bit = rest & (~rest + U1)
                    child_key = canonical(base + bit, empty - 1, layout, width, h1)[0]
                    child = probe(table, child_key, empty - 1, layout, kmask)
                    if child != 0 and -upper_of(child) >= b:
                        ret = -upper_of(child)
                        column = oriented(np.int64(ctz(bit) // h1), flipped, width)
                        store(table, key, empty, ret, NO_UPPER, column, 0, layout, kmask)
                        cut = True
                        break
                    rest ^= bit
                if cut:
                    continue
            fn[d] = order_moves(
                cur,
                msk,
                safe,
                tt_move,
                fmv[d],
                fmade[d],
                scores,
                width,
                h1,
                board,
                order,
                colmask,
                a > RACE_TO_WIN or b < RACE_TO_SURVIVE,
            )
            fi[d] = 0
            fa[d] = a
            fb[d] = b
            f0[d] = a
            fbest[d] = -1
            fw[d] = nodes
            mode = _NEXT
        elif mode == _NEXT:
            i = fi[d]
            if i < fn[d]:
                fi[d] = i + 1
                cur = fc[d]
                msk = fm[d]
                fc[d + 1] = cur ^ msk
                fm[d + 1] = msk | fmv[d, i]
                ft[d + 1] = fmade[d, i]
                fa[d + 1] = -fb[d]
                fb[d + 1] = -fa[d]
                d += 1
                mode = _ENTER
            else:  # every move searched: alpha is exact if a move raised it, else an upper bound
                a = fa[d]
                work = bit_length(np.uint64(nodes - fw[d]))
                empty = cells - ply0 - d
                if a > f0[d]:
                    move = oriented(fbest[d], ff[d], width)
                    store(table, fk[d], empty, a, a, move, work, layout, kmask)
                else:
                    store(table, fk[d], empty, NO_LOWER, a, -1, work, layout, kmask)
                ret = a
                mode = _RETURN
        else:  # _RETURN
            if d == 0:
                break
            d -= 1
            value = -ret
            column = np.int64(ctz(fmv[d, fi[d] - 1]) // h1)
            if value >= fb[d]:  # cut-off: a lower bound, proven by this move
                work = bit_length(np.uint64(nodes - fw[d]))
                move = oriented(column, ff[d], width)
                store(table, fk[d], cells - ply0 - d, value, NO_UPPER, move, work, layout, kmask)
                if d == 0:
                    fbest[0] = column
                ret = value
            else:
                if value > fa[d]:
                    fa[d] = value
                    fbest[d] = column
                mode = _NEXT
    counters[0] = nodes
    return ret, aborted, fbest[0]

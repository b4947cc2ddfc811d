/* The node search: negamax with alpha-beta over bitboards (Pons' negamax).
 *
 * Contract of search(), for a window alpha < beta (fail-hard, as Pons):
 *   precondition: the side to move cannot win at once, and the position is
 *   not full;
 *   returns v with s <= v <= alpha if s <= alpha, beta <= v <= s if s >= beta,
 *   and v == s otherwise (s = the exact score);
 *   stores in the table only bounds proven by finished subtrees, so an
 *   aborted search (deadline, node limit) leaves the table correct; an
 *   aborted search's value means nothing.
 *
 * Per node: count it; find the opponent's winning cells (inherited from the
 * parent, which computed them while ordering its moves); prune to the moves
 * that do not lose at once (two threats we can reach, or every move under
 * one of its winning cells: lost); narrow the window by the named score
 * bounds (position.h); ask what is known exactly (known.h: the book, at its
 * plies), and a ply above a known tier read the children there instead of
 * searching them (known_children); then the table; where the children live
 * in the table's main region, prefetch their buckets and cut off at once if
 * one of them is already known to refute the window (enhanced transposition
 * cut-off); then
 * try the moves, best first (movesorter.h). A null window (beta = alpha + 1)
 * makes every node a yes/no question, which is what the root driver asks.
 *
 * Interruptible: the clock, the node limit and *halt are checked once every
 * CHECK_EVERY nodes; *deadline is read afresh each time, so another thread
 * can end a search by moving it to -infinity (it returns within ~0.2 ms).
 * Searches in several threads may share one table (columns.h). */
#ifndef PLYBOT_SEARCH_H
#define PLYBOT_SEARCH_H

#include <stdint.h>

#include "known.h"
#include "position.h"
#include "table.h"

#define CHECK_EVERY 1024
#define NO_NODE_LIMIT ((int64_t)1 << 62) /* a node limit never reached (nor overflowed: + 1) */

typedef struct {
    const Geometry *g;
    Table *t;
    const KnownSet *known;   /* what is known beyond the table (maybe nothing) */
    volatile double *deadline; /* on CLOCK_MONOTONIC, as Python's time.monotonic() */
    int64_t node_limit;      /* stop once nodes passes it */
    int64_t nodes;           /* counted, carried across searches by the caller */
    int *halt;               /* if set, stop once *halt is non-zero (columns.h; atomic) */
    /* Set by search(): */
    int aborted;
    int root_best;           /* the root column that raised alpha or cut off, or -1 */
    /* Private: */
    int ply0;
    int64_t next_check;
} Search;

/* Read a position's children from the known tiers instead of searching them.
 * Precondition: `safe` holds the moves of (cur, mask) that do not lose at once (an
 * unsafe move loses at once: worse than any safe one), and the position has n stones.
 * Returns 1 with *value the position's exact score and *column a move reaching it
 * if every move of `safe` leads to a known position (or one whose player wins at
 * once); 1 with a child's value as
 * *value (a lower bound) as soon as one reaches `cut`; else 0 (a child unknown). */
static inline int known_children(const KnownSet *known, const Geometry *g, bitboard cur,
                                 bitboard mask, int n, bitboard safe, int cut, int *value,
                                 int *column) {
    const bitboard base = (cur ^ mask) + mask; /* a child's key is base + its move */
    int best = score_loss_next(g, n), best_move = 0;
    for (bitboard rest = safe; rest; rest &= rest - 1) {
        const bitboard move = rest & -rest;
        int child;
        if (!known_lookup(known, g, base + move, n + 1, &child, NULL)) {
            /* Not in a database of positions whose player cannot win at once: the move
             * parried one of two threats (safe_moves), and the other wins now. */
            const bitboard child_mask = mask | move;
            if (!(winning_cells(g, cur ^ mask, child_mask) & possible(g, child_mask))) return 0;
            child = score_win_now(g, n + 1);
        }
        if (-child > best || !best_move) {
            best = -child;
            best_move = (int)column_of(g, move) + 1;
            if (best >= cut) break;
        }
    }
    *value = best;
    *column = best_move - 1;
    return best_move > 0;
}

/* Seconds on CLOCK_MONOTONIC. */
double monotonic_seconds(void);

/* Negamax of (cur, mask) with `ply` stones in (alpha, beta); see the contract above. */
int search(Search *s, bitboard cur, bitboard mask, int ply, int alpha, int beta);

#endif

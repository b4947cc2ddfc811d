/* The node search: see search.h. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include "search.h"

#include <time.h>

#include "movesorter.h"

double monotonic_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The node (cur, msk) at distance d from the root; `threats` are the
 * opponent's winning cells. Returns 0 with s->aborted set if a limit came. */
static int negamax(Search *s, bitboard cur, bitboard msk, bitboard threats, int d, int a, int b) {
    const Geometry *g = s->g;
    Table *t = s->t;
    if (++s->nodes >= s->next_check) {
        if (s->nodes > s->node_limit || monotonic_seconds() >= *s->deadline ||
            (s->halt && __atomic_load_n(s->halt, __ATOMIC_RELAXED))) {
            s->aborted = 1;
            return 0;
        }
        const int64_t next = s->nodes + CHECK_EVERY;
        s->next_check = next < s->node_limit + 1 ? next : s->node_limit + 1;
    }
    const int n = s->ply0 + d;
    bitboard moves = possible(g, msk);
    const bitboard forced = moves & threats;
    if (forced) {
        if (forced & (forced - 1)) return score_loss_next(g, n); /* two threats to parry */
        moves = forced;
    }
    const bitboard safe = moves & ~(threats >> 1); /* never play right under an opponent's win */
    if (!safe) return score_loss_next(g, n);
    if (n >= g->cells - 2) return 0; /* we play, the opponent fills the board: nobody wins */
    const int lo = score_lowest(g, n);
    if (a < lo) {
        a = lo;
        if (a >= b) return a;
    }
    const int hi = score_highest(g, n);
    if (b > hi) {
        b = hi;
        if (a >= b) return b;
    }
    /* The root's bounds are the driver's business: below it, ask what is known. */
    if (d > 0 && n <= s->known->max_ply && n >= s->known->min_ply) {
        int exact;
        if (known_lookup(s->known, g, cur + msk, n, &exact, NULL)) return exact;
    }
    if (n + 1 <= s->known->max_ply && n + 1 >= s->known->min_ply) {
        /* Children a ply down in the known tiers (the database): read, not searched. Their
         * best is this node's exact value (or, at one that reaches beta, a cut-off), with no
         * table probe and no child nodes; a child unknown (a partial database) sends the
         * node to the search below, the lookups lost. */
        int value, column;
        if (known_children(s->known, g, cur, msk, n, safe, b, &value, &column)) {
            if (d == 0) s->root_best = column;
            return value;
        }
    }
    const bitboard base = (cur ^ msk) + msk; /* a child's key is base + its move */
    const int empty = g->cells - n;
    int flipped;
    const bitboard key = table_canonical(t, g, cur + msk, empty, &flipped);
    const uint64_t entry = table_probe(t, g, key, empty);
    int tt_move = -1;
    if (entry) {
        tt_move = oriented(g, entry_move(entry), flipped);
        if (d > 0) { /* the root wants a move from the table, its bounds come from the driver */
            const int known_lower = entry_lower(entry);
            if (known_lower > a) {
                a = known_lower;
                if (a >= b) return a;
            }
            const int known_upper = entry_upper(entry);
            if (known_upper < b) {
                b = known_upper;
                if (a >= b) return b;
            }
        }
    }
    {
        /* Ask for all the children's buckets now, so their misses overlap. The near-end region
         * too: it shares the core's L2 with everything else, and prefetching there as well
         * took a quarter off the time of the same nodes (CPU time, medians of 3-4 runs: 96
         * positions of the 12-stone layer, 100 against 74 ms a position; the first 150 of
         * Test_L1_R2, 18.6 against 14.0 s). */
        for (bitboard rest = safe; rest; rest &= rest - 1) {
            int f;
            table_prefetch(t, g, table_canonical(t, g, base + (rest & -rest), empty - 1, &f),
                           empty - 1);
        }
    }
    if (d > 0 && empty - 1 > t->etc_cells) {
        /* Enhanced transposition cut-off: a child already known bad enough for the opponent. */
        for (bitboard rest = safe; rest; rest &= rest - 1) {
            const bitboard bit = rest & -rest;
            int f;
            const bitboard child_key = table_canonical(t, g, base + bit, empty - 1, &f);
            const uint64_t child = table_probe(t, g, child_key, empty - 1);
            if (child && -entry_upper(child) >= b) {
                const int value = -entry_upper(child);
                table_store(t, g, key, empty, value, NO_UPPER,
                            oriented(g, column_of(g, bit), flipped), 0);
                return value;
            }
        }
    }
    MoveSorter sorter;
    sort_moves(&sorter, g, cur, msk, safe, tt_move, a > RACE_TO_WIN || b < RACE_TO_SURVIVE);
    const int64_t start = s->nodes;
    const int a0 = a;
    int best = -1;
    for (int i = 0; i < sorter.count; i++) {
        const int value =
            -negamax(s, cur ^ msk, msk | sorter.moves[i], sorter.made[i], d + 1, -b, -a);
        if (s->aborted) return 0;
        const int column = column_of(g, sorter.moves[i]);
        if (value >= b) { /* cut-off: a lower bound, proven by this move */
            table_store(t, g, key, empty, value, NO_UPPER, oriented(g, column, flipped),
                        bit_length((uint64_t)(s->nodes - start)));
            if (d == 0) s->root_best = column;
            return value;
        }
        if (value > a) {
            a = value;
            best = column;
        }
    }
    /* Every move searched: alpha is exact if a move raised it, else an upper bound. */
    const int work = bit_length((uint64_t)(s->nodes - start));
    if (a > a0)
        table_store(t, g, key, empty, a, a, oriented(g, best, flipped), work);
    else
        table_store(t, g, key, empty, NO_LOWER, a, -1, work);
    if (d == 0) s->root_best = best;
    return a;
}

int search(Search *s, bitboard cur, bitboard mask, int ply, int alpha, int beta) {
    s->ply0 = ply;
    s->aborted = 0;
    s->root_best = -1;
    s->next_check = s->nodes + 1; /* check at the first node: a deadline may be past already */
    const bitboard threats = winning_cells(s->g, cur ^ mask, mask);
    return negamax(s, cur, mask, threats, 0, alpha, beta);
}

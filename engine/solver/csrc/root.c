/* The root driver: see root.h. */
#include "root.h"

/* The moves of (cur, mask) that do not lose at once: the one parrying the opponent's
 * playable win if there is one, and never a move right under an opponent's winning cell
 * (0: every move loses at once). Where the opponent has two playable wins, the one parried
 * may be in it: it loses at the next move all the same. */
static bitboard safe_moves(const Geometry *g, bitboard cur, bitboard mask) {
    const bitboard moves = possible(g, mask);
    const bitboard threats = winning_cells(g, cur ^ mask, mask);
    const bitboard forced = moves & threats;
    return (forced ? forced : moves) & ~(threats >> 1);
}

/* 1 and the exact score of (cur, mask), `ply` stones, in *value if the rules settle it
 * (a win now; every move losing at once) or every child that does not lose at once is
 * known (known_children), else 0. No table, no search. */
static int settled_by_children(const Geometry *g, const KnownSet *known, bitboard cur,
                               bitboard mask, int ply, int *value) {
    if (winning_cells(g, cur, mask) & possible(g, mask)) {
        *value = score_win_now(g, ply);
        return 1;
    }
    const bitboard safe = safe_moves(g, cur, mask);
    if (!safe) {
        *value = score_loss_next(g, ply);
        return 1;
    }
    int column;
    return known_children(known, g, cur, mask, ply, safe, score_highest(g, ply) + 1, value,
                          &column);
}

/* Like known_children, two plies above the known tiers: each move of `safe` (the moves of
 * (cur, mask) that do not lose at once) settled by settled_by_children. 1 with the exact
 * *value and a *column reaching it, else 0 (a grandchild unknown). About 50 lookups. */
static int known_grandchildren(const Geometry *g, const KnownSet *known, bitboard cur,
                               bitboard mask, int ply, bitboard safe, int *value, int *column) {
    int best = 0, best_column = -1;
    for (bitboard rest = safe; rest; rest &= rest - 1) {
        const bitboard move = rest & -rest;
        int child;
        if (!settled_by_children(g, known, cur ^ mask, mask | move, ply + 1, &child)) return 0;
        if (best_column < 0 || -child > best) {
            best = -child;
            best_column = (int)column_of(g, move);
        }
    }
    *value = best;
    *column = best_column;
    return best_column >= 0;
}

int parent_bound(const Geometry *g, const KnownSet *known, bitboard cur, bitboard mask,
                 int ply, int *lower, int *exact) {
    if (ply < 1 || ply - 1 < known->min_ply || ply - 1 > known->max_ply) return 0;
    const bitboard last = cur ^ mask; /* the stones of the side that moved last */
    int found = 0;
    *exact = 0;
    for (int c = 0; c < g->width; c++) {
        const bitboard column = mask & g->colmask[c];
        const bitboard top = column & ~(column >> 1); /* a column's stones are contiguous */
        if (!(last & top)) continue;
        int score, best;
        /* The parent: that stone not played yet, its player to move. */
        if (!known_lookup(known, g, (last ^ top) + (mask ^ top), ply - 1, &score, &best))
            continue;
        if (!found || -score > *lower) *lower = -score;
        found = 1;
        if (best == c) { /* its best move made this position: the bound is its score */
            *lower = -score;
            *exact = 1;
            return 1;
        }
    }
    return found;
}

/* x * eighths / 8, rounded towards 0. */
static int part(int x, int eighths) { return x >= 0 ? eighths * x / 8 : -(-eighths * x / 8); }

Bounds root_init(const Geometry *g, const Table *t, const KnownSet *known, bitboard cur,
                 bitboard mask, int ply) {
    Bounds b = {0, 0, -1};
    if (ply >= g->cells) return b;
    const bitboard moves = possible(g, mask);
    const bitboard wins = winning_cells(g, cur, mask) & moves;
    if (wins) {
        b.lo = b.hi = score_win_now(g, ply);
        b.best = first_column(g, wins);
        return b;
    }
    {
        int exact, move;
        if (known_lookup(known, g, cur + mask, ply, &exact, &move) && move >= 0) {
            b.lo = b.hi = exact;
            b.best = move;
            return b;
        }
    }
    b.lo = score_loss_next(g, ply);  /* the opponent wins at its next move */
    b.hi = score_highest(g, ply);    /* we win at our move after next */
    const bitboard safe = safe_moves(g, cur, mask);
    if (!safe) { /* every move loses at once, as the search says */
        b.hi = b.lo;
        b.best = first_column(g, moves);
        return b;
    }
    if (ply + 1 <= known->max_ply && ply + 1 >= known->min_ply) {
        /* Every child known (the database a ply down): settled, no question to ask. */
        int value, column;
        if (known_children(known, g, cur, mask, ply, safe, b.hi + 1, &value, &column)) {
            b.lo = b.hi = value;
            b.best = column;
            return b;
        }
    }
    int flipped;
    const int empty = g->cells - ply;
    const bitboard key = table_canonical(t, g, cur + mask, empty, &flipped);
    const uint64_t entry = table_probe(t, g, key, empty);
    if (entry) {
        if (entry_lower(entry) > b.lo && entry_move(entry) >= 0) { /* only with its proof */
            b.lo = entry_lower(entry);
            b.best = oriented(g, entry_move(entry), flipped);
        }
        if (entry_upper(entry) < b.hi) b.hi = entry_upper(entry);
    }
    if (b.lo < b.hi && ply + 2 <= known->max_ply && ply + 2 >= known->min_ply) {
        /* Every grandchild known (the database two plies down): settled by lookups alone
         * (about 50), so an analysis two plies above the database searches nothing. After
         * the table, which answers a position searched before with one probe. */
        int value, column;
        if (known_grandchildren(g, known, cur, mask, ply, safe, &value, &column)) {
            b.lo = b.hi = value;
            b.best = column;
        }
    }
    if (b.lo < b.hi) {
        /* Its parents in the known tiers (a ply past them) bound it from below, and give
         * its score where one's best move made it. Last: no move comes with either, and
         * the rules above name one. */
        int lower, exact;
        if (parent_bound(g, known, cur, mask, ply, &lower, &exact) && lower <= b.hi) {
            if (lower > b.lo) {
                b.lo = lower;
                b.best = -1;
            }
            if (exact) b.hi = b.lo;
        }
    }
    return b;
}

Bounds root_step(Search *s, bitboard cur, bitboard mask, int ply, Bounds b, int weak) {
    return root_step_beside(s, cur, mask, ply, b, weak, 0);
}

Bounds root_step_beside(Search *s, bitboard cur, bitboard mask, int ply, Bounds b, int weak,
                        int beside) {
    int med;
    if (weak) {
        med = b.hi >= 1 && b.lo <= 0 ? 0 : -1;
    } else {
        med = b.lo + (b.hi - b.lo) / 2;
        const int reach = ply * EARLY_FILL_OF < s->g->cells * EARLY_FILL ? EARLY_REACH : REACH;
        if (med <= 0 && part(b.lo, reach) < med)
            med = part(b.lo, reach);
        else if (med >= 0 && part(b.hi, reach) > med)
            med = part(b.hi, reach);
        if (beside) med = med + 1 < b.hi ? med + 1 : (med - 1 >= b.lo ? med - 1 : med);
    }
    const int value = search(s, cur, mask, ply, med, med + 1);
    if (s->aborted) return b;
    if (value <= med) {
        if (value < b.hi) b.hi = value;
    } else {
        if (value > b.lo) b.lo = value;
        if (s->root_best >= 0) b.best = s->root_best;
    }
    return b;
}

int fallback_move(const Geometry *g, bitboard cur, bitboard mask) {
    const bitboard safe = safe_moves(g, cur, mask);
    return first_column(g, safe ? safe : possible(g, mask));
}

Bounds solve_position(Search *s, bitboard cur, bitboard mask, int ply, int weak, int floor) {
    Bounds b = root_init(s->g, s->t, s->known, cur, mask, ply);
    if (floor > b.lo && floor <= b.hi) {
        b.lo = floor;
        b.best = -1; /* no move is known to reach the floor */
    }
    s->aborted = 0;
    while (!settled(b, weak)) {
        b = root_step(s, cur, mask, ply, b, weak);
        if (s->aborted) return b;
    }
    if (b.best < 0 && floor == NO_FLOOR && !weak && b.lo == b.hi &&
        b.lo > score_loss_next(s->g, ply)) {
        /* The score without a move reaching it (its parents' bound, root_init): one
         * question just under it names one, as a solve (a database's entry) needs. */
        const int value = search(s, cur, mask, ply, b.lo - 1, b.lo);
        if (s->aborted) return b;
        if (value >= b.lo) b.best = s->root_best;
    }
    if (b.best < 0 && ply < s->g->cells) b.best = fallback_move(s->g, cur, mask);
    return b;
}

int analyze_position(Search *s, bitboard cur, bitboard mask, int ply, int weak, int *out) {
    const Geometry *g = s->g;
    const bitboard moves = possible(g, mask);
    const bitboard wins = winning_cells(g, cur, mask) & moves;
    for (int c = 0; c < g->width; c++) out[c] = FULL_COLUMN;
    /* The position's own bounds: its best column is worth its score, no column more. */
    const Bounds known = weak ? (Bounds){0, 0, -1} : root_init(g, s->t, s->known, cur, mask, ply);
    const int known_best = !weak && known.lo == known.hi ? known.best : -1;
    const int floor = weak ? NO_FLOOR : -known.hi;
    int best = -1;
    for (int k = 0; k < g->width; k++) {
        const int column = g->order[k];
        const bitboard move = moves & g->colmask[column];
        if (!move) continue;
        int score;
        if (wins & move) {
            score = weak ? 1 : score_win_now(g, ply);
        } else if (column == known_best) {
            score = known.lo;
        } else {
            const Bounds b = solve_position(s, cur ^ mask, mask | move, ply + 1, weak, floor);
            if (s->aborted) return -1;
            score = weak ? -weak_value(b) : -b.lo;
        }
        out[column] = score;
        if (best < 0 || score > out[best]) best = column;
    }
    return best;
}

int principal_line(Search *s, bitboard cur, bitboard mask, int ply, int score, int *line) {
    const Geometry *g = s->g;
    int n = 0;
    s->aborted = 0;
    while (ply < g->cells) {
        const Bounds b = root_init(g, s->t, s->known, cur, mask, ply);
        int move = b.best;
        if (!(b.lo == score && b.hi == score && move >= 0)) {
            const int value = search(s, cur, mask, ply, score - 1, score);
            if (s->aborted) return n;
            move = value > score - 1 ? s->root_best : -1;
            if (move < 0) move = fallback_move(g, cur, mask);
        }
        line[n++] = move;
        const bitboard cell = possible(g, mask) & g->colmask[move];
        if (alignment(g, cur | cell)) break;
        cur ^= mask;
        mask |= cell;
        ply++;
        score = -score;
    }
    return n;
}

int parse_moves(const Geometry *g, const char *text, size_t length, bitboard *cur,
                bitboard *mask, int *ply) {
    bitboard c = 0, m = 0;
    int n = 0, over = 0, status = STATUS_OK;
    for (size_t p = 0; p < length; p++) {
        const int ch = (unsigned char)text[p];
        if (ch < '1' || ch > '9') {
            status = STATUS_BAD_CHARACTER;
            break;
        }
        const int column = ch - '1';
        if (column >= g->width) {
            status = STATUS_OUT_OF_RANGE;
            break;
        }
        if (over) {
            status = STATUS_MOVE_AFTER_END;
            break;
        }
        const bitboard top = g->colmask[column] & ~(g->colmask[column] >> 1);
        if (m & top) {
            status = STATUS_COLUMN_FULL;
            break;
        }
        c ^= m;
        m |= m + (g->bottom & g->colmask[column]);
        n++;
        if (alignment(g, c ^ m) || n == g->cells) over = 1;
    }
    if (status == STATUS_OK && over) status = STATUS_GAME_OVER;
    *cur = c;
    *mask = m;
    *ply = n;
    return status;
}

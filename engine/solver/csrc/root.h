/* The root driver: narrowing a position's bounds with null-window searches
 * (Pons' iterative solve), parsing, and every column's score.
 *
 * The driver keeps lo <= s <= hi for the root's exact score s and asks the
 * node search one yes/no question at a time: "is s > med?" (a search with
 * the window (med, med + 1)). The answer moves lo up or hi down. med halves
 * the interval but, as in Pons' solver, is never closer to 0 than half-way
 * to the bound on its side: questions far from 0 are answered in few nodes
 * and leave bounds in the table for the costly ones near s. Early in the
 * game (fewer than 3/14 of the cells filled: plies 0-8 on 7x6) the question
 * goes 7/8 of the way out. Node counts, fresh 64 MB table, 7/8 against 1/2:
 *   plies 6-8, 12 positions of Test_L1_R3:       199M against 257M;
 *   plies 9-11, 40 of Test_L1_R2 / of Test_L1_R3: 41.0M / 177M against 37.4M / 156M;
 *   plies 12-14, 150 of Test_L1_R2:              70.6M against 63.2M;
 *   ply 12, 96 of the 12-stone layer (the database build's hardest chunks):
 *                                                106M against 98M.
 * (Test_L1_R1 prefers 7/8 everywhere, at a few thousand nodes a position.)
 * A weak solve only needs the sign: "s > 0?" and then, if not, "s > -1?".
 * Every question leaves its proven bounds in the table. */
#ifndef PLYBOT_ROOT_H
#define PLYBOT_ROOT_H

#include "search.h"

#define REACH 4       /* eighths of the way towards a bound a question is kept (Pons: half) */
#define EARLY_REACH 7 /* ... early in the game, where windows are wide */
#define EARLY_FILL 3     /* "early": fewer than EARLY_FILL / EARLY_FILL_OF of the cells filled */
#define EARLY_FILL_OF 14
#define FULL_COLUMN (-128) /* a full column's score in an analysis */
#define NO_FLOOR (-1000)   /* solve_position: no score known to be reached */

/* Status of a parsed notation (the numbers engine/solver/results.py reads). */
enum {
    STATUS_OK = 0,
    STATUS_BAD_CHARACTER = 1, /* not a digit 1..9 */
    STATUS_OUT_OF_RANGE = 2,  /* a column digit beyond the board's width */
    STATUS_COLUMN_FULL = 3,
    STATUS_MOVE_AFTER_END = 4, /* moves after a win or a full board */
    STATUS_GAME_OVER = 5,      /* the position itself is finished */
    STATUS_ABORTED = 6         /* the deadline or the node limit came first */
};

typedef struct {
    int lo, hi, best; /* lo <= s <= hi; best: a column known to reach lo, or -1 */
} Bounds;

/* True once the bounds answer the question (the score, or for `weak` its sign). */
static inline int settled(Bounds b, int weak) {
    if (b.lo >= b.hi) return 1;
    return weak && (b.lo >= 1 || b.hi <= -1 || (b.lo >= 0 && b.hi <= 0));
}

/* The sign of a score whose bounds are settled(.., 1). */
static inline int weak_value(Bounds b) { return b.lo >= 1 ? 1 : (b.hi <= -1 ? -1 : 0); }

/* Initial bounds of an unfinished position, from the rules, what is known
 * and the table: settled at once for an immediate win, a full board, a known
 * position (with a best move), one whose every child is known (a ply above
 * the database: known_children in search.h) or every grandchild (two plies above).
 * A ply past the known tiers, its parents there raise lo, or settle it, with no move
 * (parent_bound): lo == hi with best -1 is an exact score whose move takes a search. */
Bounds root_init(const Geometry *g, const Table *t, const KnownSet *known, bitboard cur,
                 bitboard mask, int ply);

/* What the positions a ply before (cur, mask) in the known tiers say of it: each such
 * parent (a stone of the side that moved last taken off a column's top, its player to
 * move) scores at least minus this position's score, and exactly that where it names
 * the taken stone's column as its best (a 13-stone position, one of whose 12-stone
 * parents in the database plays it). 0 if no parent is known; else 1, *lower the best
 * bound they give, and *exact 1 if it is the score. Lookups only; no move of its own. */
int parent_bound(const Geometry *g, const KnownSet *known, bitboard cur, bitboard mask,
                 int ply, int *lower, int *exact);

/* One null-window question. Precondition: !settled(b, weak), b from
 * root_init and earlier steps on this position. On abort s->aborted is set
 * and b is returned unchanged. */
Bounds root_step(Search *s, bitboard cur, bitboard mask, int ply, Bounds b, int weak);

/* root_step, the question asked beside the one root_step asks (`beside` non-zero: the
 * value next to it, inside the bounds): a second thread on the same position (columns.h)
 * asks the neighbouring question, so the two answers may settle it at once. */
Bounds root_step_beside(Search *s, bitboard cur, bitboard mask, int ply, Bounds b, int weak,
                        int beside);

/* Narrow until settled (or aborted); without a floor, a best move is asked for where the
 * score came with none (root_init's parent bound), else `best` is filled in where no
 * search named one.
 * `floor`: a score the position is known to reach (NO_FLOOR: nothing known beyond
 * the rules, the known tiers and the table); with a floor, `best` may be only the
 * fallback move, and the score is exact all the same. */
Bounds solve_position(Search *s, bitboard cur, bitboard mask, int ply, int weak, int floor);

/* Score every column into out[width] (FULL_COLUMN for a full one; with weak,
 * signs); returns the best column, or -1 if aborted (s->aborted set). What is
 * known of the position itself (the book, the table) settles its best column at
 * once and is every other column's ceiling, as in engine/solver/run.py. */
int analyze_position(Search *s, bitboard cur, bitboard mask, int ply, int weak, int *out);

/* A best move where no search named one: the first move that does not lose
 * at once, else the first legal move. Precondition: ply < cells. */
int fallback_move(const Geometry *g, bitboard cur, bitboard mask);

/* The principal variation of a position of known exact score `score` (its side to
 * move; precondition: ply < cells and `score` is the position's exact score):
 * columns into line[] (room for cells - ply), until the game ends or a search is
 * aborted (s->aborted set; the line so far is kept). At each position a move the
 * table or what is known names at the score is taken; else one null-window search
 * with the window (score - 1, score) names a move that reaches it (the fallback
 * move if none). Returns the line's length. */
int principal_line(Search *s, bitboard cur, bitboard mask, int ply, int score, int *line);

/* Play the column digits text[0:length]; returns a status and the position. */
int parse_moves(const Geometry *g, const char *text, size_t length, bitboard *cur,
                bitboard *mask, int *ply);

#endif

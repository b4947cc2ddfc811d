/* The board and its bit tricks: one Connect Four board size, chosen at run time.
 *
 * Bit layout (drawn once, here for 7x6; any W x H with W * (H + 1) <= 64):
 *
 *       .  .  .  .  .  .  .     <- sentinel row (bit H of each column, always 0 in a stone set)
 *       5 12 19 26 33 40 47
 *       4 11 18 25 32 39 46
 *       3 10 17 24 31 38 45
 *       2  9 16 23 30 37 44
 *       1  8 15 22 29 36 43
 *       0  7 14 21 28 35 42     <- bottom row
 *
 * Cell (column c, row r) is bit c * (H + 1) + r. A position is (current, mask):
 * the stones of the side to move and every stone. current + mask is an exact
 * key below 2**(W * (H + 1)): each column's stones of the side to move plus a
 * 1 just above the column's top stone (the sentinel row makes room for it).
 * This is the layout of engine/connect4.py, so a key from Python and a key
 * from here are the same number.
 *
 * Scores are Pons': from the side to move, max_stones + 1 - (the winner's
 * stones at its win), negative for a loss, 0 for a draw; max_stones is the
 * first player's stones on a full board, (W * H + 1) / 2. */
#ifndef PLYBOT_POSITION_H
#define PLYBOT_POSITION_H

#include <stdint.h>

#define MAX_WIDTH 9 /* notations are column digits 1..9 */

typedef uint64_t bitboard;

/* The constants of one board size (made once by geometry_init, then read only). */
typedef struct {
    int width, height;
    int h1;          /* height + 1: the distance between two columns' bottoms */
    int cells;       /* width * height */
    int max_stones;  /* (cells + 1) / 2 */
    int key_bits;    /* width * h1, at most 64 */
    int wide;        /* width >= 4: horizontal and diagonal fours exist */
    bitboard bottom; /* the bottom cell of every column */
    bitboard board;  /* every cell */
    bitboard kmask;  /* the key's bits: 2**key_bits - 1 */
    bitboard column_bits; /* one column including its sentinel: 2**h1 - 1 */
    int order[MAX_WIDTH]; /* columns, centre first (ties: left first) */
    bitboard colmask[MAX_WIDTH]; /* the playable cells of each column */
} Geometry;

/* Fill g for a width x height board. Returns 0, or -1 if the size is not
 * supported (1 <= width <= 9, height >= 1, width * (height + 1) <= 64). */
int geometry_init(Geometry *g, int width, int height);

static inline int popcount(bitboard x) { return __builtin_popcountll(x); }

/* Index of the lowest set bit; precondition: x != 0. */
static inline int lowest_bit(bitboard x) { return __builtin_ctzll(x); }

/* int.bit_length(x): 0 for 0. */
static inline int bit_length(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

/* The column of a single-cell bitboard. */
static inline int column_of(const Geometry *g, bitboard move) { return lowest_bit(move) / g->h1; }

/* Empty cells (playable or not) that would complete four for `stones`
 * (Pons' compute_winning_position): vertical (three below), then for the
 * horizontal and both diagonals every gap pattern (xxx_, xx_x, x_xx, _xxx).
 * Shifts stay below 64: with width >= 4, h1 <= 16. */
static inline bitboard winning_cells(const Geometry *g, bitboard stones, bitboard mask) {
    bitboard r = (stones << 1) & (stones << 2) & (stones << 3);
    if (g->wide) {
        const int shifts[3] = {g->h1, g->h1 - 1, g->h1 + 1};
        for (int k = 0; k < 3; k++) {
            const int s = shifts[k];
            bitboard p = (stones << s) & (stones << (2 * s));
            r |= p & (stones << (3 * s));
            r |= p & (stones >> s);
            p = (stones >> s) & (stones >> (2 * s));
            r |= p & (stones << s);
            r |= p & (stones >> (3 * s));
        }
    }
    return r & (g->board ^ mask);
}

/* The lowest empty cell of every column that is not full. */
static inline bitboard possible(const Geometry *g, bitboard mask) {
    return (mask + g->bottom) & g->board;
}

/* `bits` with the columns in reverse order (the board's only symmetry). */
static inline bitboard mirror(const Geometry *g, bitboard bits) {
    bitboard out = 0;
    for (int c = 0; c < g->width; c++) {
        const int here = c * g->h1, there = (g->width - 1 - c) * g->h1;
        out |= ((bits >> here) & g->column_bits) << there;
    }
    return out;
}

/* True if `stones` hold four in a row. */
static inline int alignment(const Geometry *g, bitboard stones) {
    bitboard pairs = stones & (stones >> 1);
    if (pairs & (pairs >> 2)) return 1;
    if (!g->wide) return 0;
    const int shifts[3] = {g->h1, g->h1 - 1, g->h1 + 1};
    for (int k = 0; k < 3; k++) {
        pairs = stones & (stones >> shifts[k]);
        if (pairs & (pairs >> (2 * shifts[k]))) return 1;
    }
    return 0;
}

/* The first column in g->order with a cell in `bits`, or -1. */
static inline int first_column(const Geometry *g, bitboard bits) {
    for (int k = 0; k < g->width; k++)
        if (bits & g->colmask[g->order[k]]) return g->order[k];
    return -1;
}

/* Named score bounds of a position with n stones whose side to move cannot
 * win at once (n < cells):
 *   WIN_NOW:      the side to move wins with its next stone;
 *   LOSS_NEXT:    every move lets the opponent win at once;
 *   lowest/highest: the range otherwise (it has a move that does not lose at once). */
static inline int score_win_now(const Geometry *g, int n) { return g->max_stones - n / 2; }
static inline int score_loss_next(const Geometry *g, int n) {
    return -(g->max_stones - (n + 1) / 2);
}
static inline int score_lowest(const Geometry *g, int n) {
    return -(g->max_stones - 1 - (n + 1) / 2);
}
static inline int score_highest(const Geometry *g, int n) { return g->max_stones - 1 - n / 2; }

#endif

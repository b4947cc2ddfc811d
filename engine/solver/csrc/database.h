/* A database of every position with exactly `stones` stones (the 12-stone
 * database of 7x6): one byte a position, addressed by the position's rank, no
 * keys stored, so a lookup is a few table reads and one byte of a memory map.
 *
 * The rank of a position (its slot), for a board with a Ranking r:
 *
 *     slot = shape * r->colourings + colouring
 *
 *   shape      the index of the position's column heights (h_0 .. h_{W-1},
 *              summing to `stones`) among the canonical shapes, those with
 *              h <= reversed(h) lexicographically, in lexicographic order. A
 *              position whose shape is not canonical is ranked as its mirror.
 *   colouring  the colex rank of the side to move's stones among all stones,
 *              the stones numbered column by column from column 0, bottom up
 *              (bit i of the pattern: stone i is the side to move's). For a
 *              palindromic shape, the smaller of the position's and its mirror's.
 *
 * A position and its mirror image share one slot. Slots of shapes or colourings
 * that no game reaches stay unknown; 7x6 at 12 stones: 7,702 canonical shapes
 * times 924 colourings = 7,116,648 slots (7.1 MB).
 *
 * The value byte of a slot:
 *
 *     value = (score - lowest) * W + best       (0xFF: not known)
 *
 *   score  the exact score from the side to move (Pons'), in [lowest, highest]
 *          with lowest = score_loss_next(stones), highest = score_highest(stones);
 *   best   a column reaching it, in the slot's (canonical) orientation.
 * Unknown: a partial database's holes, and the positions it never holds (over,
 * or whose player to move wins at once: the search settles those itself). */
#ifndef PLYBOT_DATABASE_H
#define PLYBOT_DATABASE_H

#include <stddef.h>
#include <stdint.h>

#include "position.h"

#define DB_UNKNOWN 0xFF
#define DB_MAX_SHAPE_CELLS 64

typedef struct {
    int stones;           /* the stone count every position in it has */
    int mover_stones;     /* the side to move's: stones / 2 */
    int lowest, highest;  /* the score range of a value byte */
    size_t shapes;        /* canonical shapes */
    size_t colourings;    /* C(stones, mover_stones) */
    size_t slots;         /* shapes * colourings */
    size_t all_shapes;    /* every shape, canonical or not */
    /* offset[(i * (stones + 1) + rem) * (H + 1) + h]: shapes ranked before those whose
     * column i holds h stones, given rem stones in columns i.. (lexicographic rank). */
    uint32_t *offset;
    int32_t *canonical;   /* by lexicographic rank: the canonical index of its class */
    uint8_t *kind;        /* by lexicographic rank: SHAPE_CANONICAL, _MIRRORED or _PALINDROME */
} Ranking;

enum { SHAPE_CANONICAL = 0, SHAPE_MIRRORED = 1, SHAPE_PALINDROME = 2 };

/* Fill r for positions of g with `stones` stones. Returns 0, or -1 if the
 * database cannot exist for them (stones out of range, a value range
 * too wide for a byte, more than 2**32 slots, or no memory). */
int ranking_init(Ranking *r, const Geometry *g, int stones);
void ranking_free(Ranking *r);

/* The stones of each column of the position whose key is `key` (current + mask). */
static inline void column_heights(const Geometry *g, bitboard key, int *heights) {
    const bitboard marked = key + g->bottom;
    for (int c = 0; c < g->width; c++)
        heights[c] = bit_length((marked >> (c * g->h1)) & g->column_bits) - 1;
}

/* C(n, k) for n, k <= 64 (0 when k > n). */
extern uint64_t binomial_table[DB_MAX_SHAPE_CELLS + 1][DB_MAX_SHAPE_CELLS + 1];

/* The colex rank of the side to move's stones of (key, heights). */
static inline uint64_t colouring_rank(const Geometry *g, bitboard key, const int *heights) {
    uint64_t rank = 0;
    int at = 0, ones = 0;
    for (int c = 0; c < g->width; c++) {
        const bitboard column_mask = (((bitboard)1 << heights[c]) - 1);
        /* key's column minus the column's mask: the side to move's stones there */
        const bitboard mine = (((key >> (c * g->h1)) & g->column_bits) - column_mask) & column_mask;
        for (bitboard rest = mine; rest; rest &= rest - 1) {
            ones++;
            rank += binomial_table[at + lowest_bit(rest)][ones];
        }
        at += heights[c];
    }
    return rank;
}

/* The lexicographic rank of a shape (heights summing to r->stones) among all shapes. */
static inline size_t shape_rank(const Ranking *r, const Geometry *g, const int *heights) {
    size_t lex = 0;
    int rem = r->stones;
    for (int c = 0; c < g->width; c++) {
        lex += r->offset[((size_t)c * (r->stones + 1) + rem) * g->h1 + heights[c]];
        rem -= heights[c];
    }
    return lex;
}

/* The slot of the position whose key is `key`, which must have r->stones
 * stones; *flipped is 1 if the slot holds its mirror image (flip its columns). */
static inline size_t ranking_slot(const Ranking *r, const Geometry *g, bitboard key,
                                  int *flipped) {
    int heights[MAX_WIDTH];
    column_heights(g, key, heights);
    const size_t lex = shape_rank(r, g, heights);
    const size_t shape = (size_t)r->canonical[lex];
    const int kind = r->kind[lex];
    uint64_t colouring;
    *flipped = 0;
    if (kind == SHAPE_CANONICAL) {
        colouring = colouring_rank(g, key, heights);
    } else {
        const bitboard image = mirror(g, key);
        int image_heights[MAX_WIDTH];
        for (int c = 0; c < g->width; c++) image_heights[c] = heights[g->width - 1 - c];
        colouring = colouring_rank(g, image, image_heights);
        *flipped = 1;
        if (kind == SHAPE_PALINDROME) {
            const uint64_t own = colouring_rank(g, key, heights);
            if (own <= colouring) {
                colouring = own;
                *flipped = 0;
            }
        }
    }
    return shape * r->colourings + (size_t)colouring;
}

/* A read-only view of a database's value bytes (owned by the caller: a memory map). */
typedef struct {
    const Ranking *ranking;
    const uint8_t *values; /* ranking->slots bytes */
} Database;

/* 1 and *score (and *best in the position's own orientation, if not NULL) if
 * the database knows the position with key cur + mask, else 0. Precondition:
 * the position has d->ranking->stones stones. */
static inline int database_score(const Database *d, const Geometry *g, bitboard key, int *score,
                                 int *best) {
    int flipped;
    const uint8_t v = d->values[ranking_slot(d->ranking, g, key, &flipped)];
    if (v == DB_UNKNOWN) return 0;
    *score = d->ranking->lowest + v / g->width;
    if (best) {
        const int b = v % g->width;
        *best = flipped ? g->width - 1 - b : b;
    }
    return 1;
}

/* Every ongoing position after `ply` moves (no four on the board, not full),
 * one per mirror pair: their canonical keys min(key, mirror(key)), ascending,
 * in *out (malloc'd, the caller frees). Returns 0, or -1 (no memory). */
int layer_keys(const Geometry *g, int ply, uint64_t **out, size_t *count);

/* The positions after `ply` moves that a solver must search (ongoing, and the
 * side to move cannot win at once), one per mirror pair, in build order: the
 * children of each position at ply - 1 (ascending canonical keys), centre
 * column first, each with its first parent. Cut into chunks of at least `size`
 * positions at a parent's end (the last may be smaller): chunk i is
 * keys[starts[i] .. starts[i + 1]). Returns 0, or -1 (no memory). */
int layer_plan(const Geometry *g, int ply, size_t size, uint64_t **keys, size_t *count,
               uint64_t **starts, size_t *chunks);

#endif

/* Exact scores known before any search (the opening book; later a 12-stone
 * database): the first rung of the search's lookup ladder (known, then the
 * transposition table).
 *
 * A Known is a read-only view of two arrays owned by the caller (the book's
 * numpy arrays, kept alive by the Core that holds the view):
 *   keys[i]   strictly increasing canonical keys: min(key, mirror(key)) with
 *             key = current + mask (position.h's layout);
 *   scores[i] the exact score of that position, from its side to move;
 *   best[i]   a best move of it, a column in the canonical orientation (or NULL: none given).
 * Positions of plies in [min_ply, max_ply] may be in it; the search asks only there.
 * A miss says nothing (a partial book or database is used for what it holds). */
#ifndef PLYBOT_KNOWN_H
#define PLYBOT_KNOWN_H

#include <stddef.h>
#include <stdint.h>

#include "position.h"

typedef struct {
    const uint64_t *keys;
    const int8_t *scores;
    const int8_t *best;
    size_t count;
    int min_ply, max_ply;
} Known;

/* Fill k over the arrays; computes the plies their keys span. Precondition:
 * keys strictly increasing, each a canonical key of g's board. */
void known_init(Known *k, const Geometry *g, const uint64_t *keys, const int8_t *scores,
                const int8_t *best, size_t count);

/* 1 and *score if the position with key cur + mask is known, else 0. With
 * `best`, also a best move in the position's own orientation (-1 if none given). */
static inline int known_score(const Known *k, const Geometry *g, bitboard key, int *score,
                              int *best) {
    const bitboard image = mirror(g, key);
    const bitboard wanted = image < key ? image : key;
    size_t lo = 0, hi = k->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (k->keys[mid] < wanted)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < k->count && k->keys[lo] == wanted) {
        *score = k->scores[lo];
        if (best) {
            const int b = k->best ? k->best[lo] : -1;
            *best = b >= 0 && image < key ? g->width - 1 - b : b;
        }
        return 1;
    }
    return 0;
}

#endif

/* Exact scores known before any search (the opening book, the 12-stone
 * database): the first rung of the search's lookup ladder (known, then the
 * transposition table). A KnownSet holds up to MAX_KNOWN tiers (the book, a
 * database), asked in order at the plies each spans.
 *
 * A Known is a read-only view of two arrays owned by the caller (the book's
 * numpy arrays, kept alive by the Core that holds the view):
 *   keys[i]   strictly increasing canonical keys: min(key, mirror(key)) with
 *             key = current + mask (position.h's layout);
 *   scores[i] the exact score of that position, from its side to move;
 *   best[i]   a best move of it, a column in the canonical orientation (or NULL: none given).
 * Positions of plies in [min_ply, max_ply] may be in it; the search asks only there.
 * A miss says nothing (a partial book or database is used for what it holds).
 * A tier may instead be a stones database (database.h): one ply, no keys. */
#ifndef PLYBOT_KNOWN_H
#define PLYBOT_KNOWN_H

#include <stddef.h>
#include <stdint.h>

#include "database.h"
#include "position.h"

/* A tier is either sorted keys (keys, scores, best) or a stones database (db). */
typedef struct {
    const Database *db;
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

/* Fill k over a stones database (kept alive by the caller): it spans one ply. */
void known_init_database(Known *k, const Database *db);

/* 1 and *score if the position with key cur + mask is known, else 0. With
 * `best`, also a best move in the position's own orientation (-1 if none given). */
static inline int known_score(const Known *k, const Geometry *g, bitboard key, int *score,
                              int *best) {
    if (k->db) return database_score(k->db, g, key, score, best);
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

#define MAX_KNOWN 4

typedef struct {
    int count;
    Known tier[MAX_KNOWN];
    int min_ply, max_ply; /* the plies any tier spans (empty set: cells + 1, -1) */
} KnownSet;

/* An empty set. */
void known_set_clear(KnownSet *k, const Geometry *g);

/* Add k as the set's last tier; returns 0, or -1 if the set is full. */
int known_set_add(KnownSet *set, const Known *k);

/* 1 and *score (and *best, if not NULL) if a tier knows the position with key
 * cur + mask and `ply` stones (the first tier that does), else 0. */
static inline int known_lookup(const KnownSet *set, const Geometry *g, bitboard key, int ply,
                               int *score, int *best) {
    if (ply < set->min_ply || ply > set->max_ply) return 0;
    for (int i = 0; i < set->count; i++) {
        const Known *k = &set->tier[i];
        if (ply >= k->min_ply && ply <= k->max_ply && known_score(k, g, key, score, best))
            return 1;
    }
    return 0;
}

#endif

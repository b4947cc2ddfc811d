/* Known exact scores: see known.h. */
#include "known.h"

/* Stones of the position whose key is `key` (current + mask): in each
 * column of key + bottom (current's stones plus 2**stones, never carrying into
 * the next column) the top set bit sits just above the column's top stone. */
static int stones_of(const Geometry *g, bitboard key) {
    const bitboard marked = key + g->bottom;
    int n = 0;
    for (int c = 0; c < g->width; c++) {
        const bitboard column = (marked >> (c * g->h1)) & g->column_bits;
        n += bit_length(column) - 1;
    }
    return n;
}

void known_init(Known *k, const Geometry *g, const uint64_t *keys, const int8_t *scores,
                const int8_t *best, size_t count) {
    k->db = NULL;
    k->keys = keys;
    k->scores = scores;
    k->best = best;
    k->count = count;
    k->min_ply = g->cells;
    k->max_ply = -1;
    for (size_t i = 0; i < count; i++) {
        const int n = stones_of(g, keys[i]);
        if (n < k->min_ply) k->min_ply = n;
        if (n > k->max_ply) k->max_ply = n;
    }
}

void known_set_clear(KnownSet *k, const Geometry *g) {
    k->count = 0;
    k->min_ply = g->cells + 1;
    k->max_ply = -1;
}

int known_set_add(KnownSet *set, const Known *k) {
    if (set->count >= MAX_KNOWN) return -1;
    set->tier[set->count++] = *k;
    if (k->min_ply < set->min_ply) set->min_ply = k->min_ply;
    if (k->max_ply > set->max_ply) set->max_ply = k->max_ply;
    return 0;
}

void known_init_database(Known *k, const Database *db) {
    k->db = db;
    k->keys = NULL;
    k->scores = NULL;
    k->best = NULL;
    k->count = 0;
    k->min_ply = k->max_ply = db->ranking->stones;
}

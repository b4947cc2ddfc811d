/* The stones database's ranking and the layers a build solves: see database.h. */
#include "database.h"

#include <stdlib.h>
#include <string.h>

uint64_t binomial_table[DB_MAX_SHAPE_CELLS + 1][DB_MAX_SHAPE_CELLS + 1];

static void binomials(void) {
    if (binomial_table[0][0]) return;
    for (int n = 0; n <= DB_MAX_SHAPE_CELLS; n++) {
        binomial_table[n][0] = 1;
        for (int k = 1; k <= n; k++)
            binomial_table[n][k] = binomial_table[n - 1][k - 1] + (k < n ? binomial_table[n - 1][k] : 0);
    }
}

/* Visit every shape in lexicographic order: fill kind/canonical of each. */
static void classify(Ranking *r, const Geometry *g, int *heights, int column, int rem,
                     size_t *lex, size_t *canonical) {
    if (column == g->width) {
        if (rem) return;
        int mirrored[MAX_WIDTH];
        for (int c = 0; c < g->width; c++) mirrored[c] = heights[g->width - 1 - c];
        const size_t image = shape_rank(r, g, mirrored);
        if (image < *lex) { /* its canonical class was met first, at `image` */
            r->kind[*lex] = SHAPE_MIRRORED;
            r->canonical[*lex] = r->canonical[image];
        } else {
            r->kind[*lex] = image == *lex ? SHAPE_PALINDROME : SHAPE_CANONICAL;
            r->canonical[*lex] = (int32_t)(*canonical)++;
        }
        (*lex)++;
        return;
    }
    for (int h = 0; h <= g->height && h <= rem; h++) {
        heights[column] = h;
        classify(r, g, heights, column + 1, rem - h, lex, canonical);
    }
}

int ranking_init(Ranking *r, const Geometry *g, int stones) {
    memset(r, 0, sizeof *r);
    binomials();
    if (stones < 0 || stones >= g->cells || stones > DB_MAX_SHAPE_CELLS) return -1;
    r->stones = stones;
    r->mover_stones = stones / 2;
    r->lowest = score_loss_next(g, stones);
    r->highest = score_highest(g, stones);
    if ((r->highest - r->lowest + 1) * g->width > DB_UNKNOWN) return -1;
    r->colourings = binomial_table[stones][r->mover_stones];
    /* ways[i][s]: fillings of columns i.. with s stones */
    const int W = g->width, S = stones + 1, H1 = g->h1;
    uint64_t *ways = calloc((size_t)(W + 1) * S, sizeof *ways);
    r->offset = calloc((size_t)W * S * H1, sizeof *r->offset);
    if (!ways || !r->offset) goto fail;
    ways[(size_t)W * S + 0] = 1;
    for (int i = W - 1; i >= 0; i--)
        for (int s = 0; s < S; s++)
            for (int h = 0; h <= g->height && h <= s; h++)
                ways[(size_t)i * S + s] += ways[(size_t)(i + 1) * S + s - h];
    r->all_shapes = ways[0 * S + stones];
    if (r->all_shapes > UINT32_MAX) goto fail;
    for (int i = 0; i < W; i++)
        for (int rem = 0; rem < S; rem++) {
            uint64_t before = 0;
            for (int h = 0; h <= g->height; h++) {
                r->offset[((size_t)i * S + rem) * H1 + h] = (uint32_t)before;
                if (h <= rem) before += ways[(size_t)(i + 1) * S + rem - h];
            }
        }
    free(ways);
    ways = NULL;
    r->canonical = malloc(r->all_shapes * sizeof *r->canonical);
    r->kind = malloc(r->all_shapes);
    if (!r->canonical || !r->kind) goto fail;
    int heights[MAX_WIDTH];
    size_t lex = 0, canonical = 0;
    classify(r, g, heights, 0, stones, &lex, &canonical);
    r->shapes = canonical;
    r->slots = r->shapes * r->colourings;
    if (r->slots > UINT32_MAX) goto fail;
    return 0;
fail:
    free(ways);
    ranking_free(r);
    return -1;
}

void ranking_free(Ranking *r) {
    free(r->offset);
    free(r->canonical);
    free(r->kind);
    r->offset = NULL;
    r->canonical = NULL;
    r->kind = NULL;
}

/* -- layers --------------------------------------------------------------------------- */

static bitboard mask_of(const Geometry *g, bitboard key) {
    int heights[MAX_WIDTH];
    column_heights(g, key, heights);
    bitboard mask = 0;
    for (int c = 0; c < g->width; c++) mask |= (((bitboard)1 << heights[c]) - 1) << (c * g->h1);
    return mask;
}

static bitboard canonical_key(const Geometry *g, bitboard key) {
    const bitboard image = mirror(g, key);
    return image < key ? image : key;
}

static int by_value(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The child of (cur, mask) by `move`, as (*child_cur, *child_mask); 0 if it ends the game. */
static int child_of(const Geometry *g, bitboard cur, bitboard mask, bitboard move, int ply,
                    bitboard *child_cur, bitboard *child_mask) {
    if (alignment(g, cur | move) || ply + 1 >= g->cells) return 0;
    *child_cur = cur ^ mask;
    *child_mask = mask | move;
    return 1;
}

int layer_keys(const Geometry *g, int ply, uint64_t **out, size_t *count) {
    uint64_t *level = malloc(sizeof *level);
    if (!level) return -1;
    level[0] = 0; /* the empty board */
    size_t n = 1;
    for (int p = 0; p < ply; p++) {
        uint64_t *next = malloc((n * g->width + 1) * sizeof *next);
        if (!next) {
            free(level);
            return -1;
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            const bitboard mask = mask_of(g, level[i]), cur = level[i] - mask;
            for (bitboard moves = possible(g, mask); moves; moves &= moves - 1) {
                bitboard cc, cm;
                if (child_of(g, cur, mask, moves & -moves, p, &cc, &cm))
                    next[m++] = canonical_key(g, cc + cm);
            }
        }
        free(level);
        qsort(next, m, sizeof *next, by_value);
        size_t u = 0;
        for (size_t i = 0; i < m; i++)
            if (u == 0 || next[i] != next[u - 1]) next[u++] = next[i];
        level = next;
        n = u;
    }
    *out = level;
    *count = n;
    return 0;
}

#define KEYSET_ODD 0x9E3779B97F4A7C15ULL

/* An open-addressing set of nonzero keys. */
typedef struct {
    uint64_t *slots;
    size_t capacity, used; /* capacity: a power of two */
} KeySet;

static int keyset_grow(KeySet *s) {
    const size_t capacity = s->capacity ? s->capacity * 2 : (1 << 16);
    uint64_t *slots = calloc(capacity, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < s->capacity; i++) {
        const uint64_t k = s->slots[i];
        if (!k) continue;
        size_t j = (k * KEYSET_ODD) >> 20 & (capacity - 1);
        while (slots[j]) j = (j + 1) & (capacity - 1);
        slots[j] = k;
    }
    free(s->slots);
    s->slots = slots;
    s->capacity = capacity;
    return 0;
}

/* 1 if key was added, 0 if it was there, -1 (no memory). Precondition: key != 0. */
static int keyset_add(KeySet *s, uint64_t key) {
    if (2 * (s->used + 1) > s->capacity && keyset_grow(s) < 0) return -1;
    size_t j = (key * KEYSET_ODD) >> 20 & (s->capacity - 1);
    while (s->slots[j]) {
        if (s->slots[j] == key) return 0;
        j = (j + 1) & (s->capacity - 1);
    }
    s->slots[j] = key;
    s->used++;
    return 1;
}

int layer_plan(const Geometry *g, int ply, size_t size, uint64_t **keys, size_t *count,
               uint64_t **starts, size_t *chunks) {
    *keys = NULL;
    *starts = NULL;
    if (ply < 1) return -1;
    uint64_t *parents;
    size_t n;
    if (layer_keys(g, ply - 1, &parents, &n) < 0) return -1;
    KeySet seen = {0};
    size_t cap = 1024, m = 0, cap_starts = 64, c = 0, chunk_start = 0;
    uint64_t *out = malloc(cap * sizeof *out), *cuts = malloc(cap_starts * sizeof *cuts);
    if (!out || !cuts) goto fail;
    for (size_t i = 0; i < n; i++) {
        const bitboard mask = mask_of(g, parents[i]), cur = parents[i] - mask;
        const bitboard moves = possible(g, mask);
        for (int k = 0; k < g->width; k++) {
            const bitboard move = moves & g->colmask[g->order[k]];
            bitboard cc, cm;
            if (!move || !child_of(g, cur, mask, move, ply - 1, &cc, &cm)) continue;
            if (winning_cells(g, cc, cm) & possible(g, cm)) continue; /* wins at once */
            const int added = keyset_add(&seen, canonical_key(g, cc + cm));
            if (added < 0) goto fail;
            if (!added) continue;
            if (m == cap) {
                uint64_t *more = realloc(out, (cap *= 2) * sizeof *out);
                if (!more) goto fail;
                out = more;
            }
            out[m++] = canonical_key(g, cc + cm);
        }
        if (m - chunk_start >= size || (i + 1 == n && m > chunk_start)) {
            if (c + 1 >= cap_starts) {
                uint64_t *more = realloc(cuts, (cap_starts *= 2) * sizeof *cuts);
                if (!more) goto fail;
                cuts = more;
            }
            cuts[c++] = chunk_start;
            chunk_start = m;
        }
    }
    cuts[c] = m; /* the end of the last chunk */
    free(parents);
    free(seen.slots);
    *keys = out;
    *count = m;
    *starts = cuts;
    *chunks = c;
    return 0;
fail:
    free(parents);
    free(seen.slots);
    free(out);
    free(cuts);
    return -1;
}

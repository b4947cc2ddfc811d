/* The transposition table: proven bounds of positions, one uint64 per entry.
 *
 * Invariant of every entry, for the position p it belongs to:
 *     lower <= s(p) <= upper      (s = the exact score)
 * Bounds are facts about positions, not about a search (no depth limit, no
 * heuristic), so an entry never goes stale: the table survives from one solve
 * to the next. Storing merges with what is there (the higher lower bound, the
 * lower upper bound).
 *
 * Entry layout (0 = empty; an occupied entry is never 0 because the bound
 * fields hold bound + 32 and every score lies in [-31, 31]):
 *
 *      63 .............. 22 21 .. 16 15 .. 10 9 .. 6 5 .. 0
 *     |  check             | upper+32| lower+32| move+1|work |
 *
 *   work:  bit_length of the nodes searched below the position (replacement priority);
 *   move:  the column that proved `lower` (-1 if none is known);
 *   check: the hashed key's bits the bucket index does not use, so a hit is
 *          exact: h = key * ODD mod 2**K (a bijection of K-bit keys, K = W*(H+1));
 *          the top bits of h pick a bucket, the rest (at most 42) are checked.
 *
 * Two regions, because a probe that misses the CPU caches costs more than a
 * node: positions with at most near_end_cells empty cells (most nodes, each
 * cheap to search again) live in a small region the size of a core's L2;
 * the others in the main region. The search prefetches the buckets of all
 * children of a node at once, in either region. Both are keyed exactly: the split costs a few
 * nodes, never a wrong answer.
 *
 * Early in the game (more than mirror_cells empty cells) a position and its
 * mirror image share an entry, filed under the smaller key, its move mirrored.
 *
 * Buckets are two slots side by side. A position already in the bucket is
 * updated in place (bounds merged, work = max). A new one goes to slot 0 if
 * its work is at least slot 0's, moving slot 0's entry to slot 1; otherwise
 * it overwrites slot 1. Slot 0 keeps the costliest knowledge, slot 1 the newest. */
#ifndef PLYBOT_TABLE_H
#define PLYBOT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "position.h"

#define TABLE_ODD 0x9E3779B97F4A7C15ULL
#define TABLE_OFFSET 32
#define TABLE_CHECK_SHIFT 22
#define TABLE_CHECK_BITS 42
#define NEAR_END_BYTES (1 << 20) /* the near-end region: fits a core's L2 cache */
#define NEAR_END_CELLS 18
#define MIRROR_CELLS 28
#define NO_LOWER (-99) /* "unknown" bounds for table_store, clamped there */
#define NO_UPPER 99

typedef struct {
    uint64_t *slots;
    size_t count;        /* slots in both regions */
    void *memory;        /* what was mapped (slots lie inside, on a huge-page boundary) */
    size_t memory_bytes;
    int main_shift;      /* key_bits - bucket bits of the main region */
    int near_shift;      /* ... of the near-end region */
    size_t near_base;    /* first slot of the near-end region */
    int near_end_cells, mirror_cells, etc_cells;
} Table;

/* log2 of the number of 2-slot buckets for about table_bytes: at least
 * 2**(key_bits - 42) (the check field's limit), at most 2**(key_bits - 1). */
int table_bucket_bits(int key_bits, size_t table_bytes);

/* Map a zeroed table of about table_bytes for g's keys. Returns 0, or -1 if
 * the memory cannot be had. Its pages are faulted in as the search first
 * writes them: a process holds only the table it used (with huge pages, a
 * few dozen faults over a 64 MB table). */
int table_init(Table *t, const Geometry *g, size_t table_bytes, int near_end_cells,
               int mirror_cells, int etc_cells);
void table_free(Table *t);
void table_reset(Table *t);

/* Fault every page of the table in now, its contents unchanged: for a table
 * that will be filled anyway (a worker's), so that its first searches do not
 * pay a page fault, each a 2 MB page zeroed, at their first probes. */
void table_populate(Table *t);

static inline size_t table_slot(const Table *t, const Geometry *g, bitboard key, int empty,
                                uint64_t *check) {
    const uint64_t h = (key * TABLE_ODD) & g->kmask;
    const int near = empty <= t->near_end_cells;
    const int shift = near ? t->near_shift : t->main_shift;
    *check = h & (((uint64_t)1 << shift) - 1);
    return (near ? t->near_base : 0) + (size_t)(h >> shift) * 2;
}

/* The key a position's entry is filed under; *flipped says it is its mirror image's. */
static inline bitboard table_canonical(const Table *t, const Geometry *g, bitboard key, int empty,
                                       int *flipped) {
    if (empty > t->mirror_cells) {
        const bitboard image = mirror(g, key);
        if (image < key) {
            *flipped = 1;
            return image;
        }
    }
    *flipped = 0;
    return key;
}

/* `move` (or -1) seen from the other orientation when `flipped`. */
static inline int oriented(const Geometry *g, int move, int flipped) {
    return flipped && move >= 0 ? g->width - 1 - move : move;
}

static inline int entry_lower(uint64_t e) { return (int)((e >> 10) & 63) - TABLE_OFFSET; }
static inline int entry_upper(uint64_t e) { return (int)((e >> 16) & 63) - TABLE_OFFSET; }
static inline int entry_move(uint64_t e) { return (int)((e >> 6) & 15) - 1; }
static inline int entry_work(uint64_t e) { return (int)(e & 63); }

/* A slot read and written whole (relaxed atomics: plain moves on x86-64), so threads
 * searching with one table (columns.h) each see a whole entry, old or new. A race
 * between two stores to a bucket can lose a fact (an update, or the entry moved to
 * slot 1), never make a wrong one: every entry holds only proven bounds. */
static inline uint64_t slot_load(const uint64_t *slot) {
    return __atomic_load_n(slot, __ATOMIC_RELAXED);
}
static inline void slot_store(uint64_t *slot, uint64_t entry) {
    __atomic_store_n(slot, entry, __ATOMIC_RELAXED);
}

/* The entry filed under `key` (a canonical key, `empty` empty cells), or 0. */
static inline uint64_t table_probe(const Table *t, const Geometry *g, bitboard key, int empty) {
    uint64_t check;
    const size_t i = table_slot(t, g, key, empty, &check);
    uint64_t e = slot_load(&t->slots[i]);
    if (e && (e >> TABLE_CHECK_SHIFT) == check) return e;
    e = slot_load(&t->slots[i + 1]);
    if (e && (e >> TABLE_CHECK_SHIFT) == check) return e;
    return 0;
}

/* Start loading the bucket of `key` into the cache (a child searched soon). */
static inline void table_prefetch(const Table *t, const Geometry *g, bitboard key, int empty) {
    uint64_t check;
    __builtin_prefetch(&t->slots[table_slot(t, g, key, empty, &check)], 0, 3);
}

static inline uint64_t entry_pack(uint64_t check, int lower, int upper, int move, int work) {
    return (check << TABLE_CHECK_SHIFT) | ((uint64_t)(upper + TABLE_OFFSET) << 16) |
           ((uint64_t)(lower + TABLE_OFFSET) << 10) | ((uint64_t)(move + 1) << 6) |
           (uint64_t)work;
}

/* Record lower <= s(key) <= upper; `move` (or -1) proves `lower`; 0 <= work <= 63.
 * Bounds outside the position's range may be passed (NO_LOWER, NO_UPPER) and
 * are clamped to +-31. */
static inline void table_store(Table *t, const Geometry *g, bitboard key, int empty, int lower,
                               int upper, int move, int work) {
    if (lower < -31) lower = -31;
    if (upper > 31) upper = 31;
    uint64_t check;
    const size_t i = table_slot(t, g, key, empty, &check);
    const uint64_t e0 = slot_load(&t->slots[i]), e1 = slot_load(&t->slots[i + 1]);
    size_t slot;
    uint64_t old;
    if (e0 && (e0 >> TABLE_CHECK_SHIFT) == check) {
        slot = i;
        old = e0;
    } else if (e1 && (e1 >> TABLE_CHECK_SHIFT) == check) {
        slot = i + 1;
        old = e1;
    } else {
        const uint64_t entry = entry_pack(check, lower, upper, move, work);
        if (work >= entry_work(e0)) {
            slot_store(&t->slots[i + 1], e0);
            slot_store(&t->slots[i], entry);
        } else {
            slot_store(&t->slots[i + 1], entry);
        }
        return;
    }
    const int old_lower = entry_lower(old);
    if (lower < old_lower || (lower == old_lower && move < 0)) {
        lower = old_lower;
        move = entry_move(old);
    }
    const int old_upper = entry_upper(old);
    if (old_upper < upper) upper = old_upper;
    const int old_work = entry_work(old);
    slot_store(&t->slots[slot], entry_pack(check, lower, upper, move, work > old_work ? work : old_work));
}

#endif

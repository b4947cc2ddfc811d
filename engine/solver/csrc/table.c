/* The transposition table's memory: see table.h. */
#define _GNU_SOURCE
#include "table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

int table_bucket_bits(int key_bits, size_t table_bytes) {
    size_t fit_bytes = table_bytes / 16;
    if (fit_bytes < 1) fit_bytes = 1;
    const int fit = bit_length(fit_bytes) - 1;
    int bits = fit < key_bits - 1 ? fit : key_bits - 1;
    if (bits < key_bits - TABLE_CHECK_BITS) bits = key_bits - TABLE_CHECK_BITS;
    return bits < 1 ? 1 : bits;
}

int table_init(Table *t, const Geometry *g, size_t table_bytes, int near_end_cells,
               int mirror_cells, int etc_cells) {
    size_t near_bytes = table_bytes / 4 < 16 ? 16 : table_bytes / 4;
    if (near_bytes > NEAR_END_BYTES) near_bytes = NEAR_END_BYTES;
    const int main_bits = table_bucket_bits(g->key_bits, table_bytes);
    const int near_bits = table_bucket_bits(g->key_bits, near_bytes);
    t->count = ((size_t)2 << main_bits) + ((size_t)2 << near_bits);
    t->near_base = (size_t)2 << main_bits;
    t->main_shift = g->key_bits - main_bits;
    t->near_shift = g->key_bits - near_bits;
    t->near_end_cells = near_end_cells;
    t->mirror_cells = mirror_cells;
    t->etc_cells = etc_cells;
    const size_t bytes = t->count * sizeof(uint64_t);
    /* 2 MB more than needed, so the slots can start on a huge-page boundary:
     * random probes then miss the TLB far less often. */
    t->memory_bytes = bytes + HUGE_PAGE;
    t->memory = mmap(NULL, t->memory_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (t->memory == MAP_FAILED) {
        t->memory = NULL;
        return -1;
    }
    uintptr_t start = ((uintptr_t)t->memory + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
#ifdef MADV_HUGEPAGE
    madvise((void *)start, bytes, MADV_HUGEPAGE);
#endif
    t->slots = (uint64_t *)start;
    return 0;
}

void table_free(Table *t) {
    if (t->memory) munmap(t->memory, t->memory_bytes);
    t->memory = NULL;
    t->slots = NULL;
}

void table_reset(Table *t) { memset(t->slots, 0, t->count * sizeof(uint64_t)); }

void table_populate(Table *t) {
#ifdef MADV_POPULATE_WRITE
    if (madvise(t->slots, t->count * sizeof(uint64_t), MADV_POPULATE_WRITE) == 0) return;
#endif
    /* A kernel before 5.14: write each page once, as the search would. */
    volatile uint64_t *slots = t->slots;
    const size_t step = 4096 / sizeof(uint64_t);
    for (size_t i = 0; i < t->count; i += step) slots[i] = slots[i];
}

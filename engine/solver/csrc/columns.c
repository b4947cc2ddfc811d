/* An analysis's columns settled in threads: see columns.h. */
#include "columns.h"

#include <pthread.h>

typedef struct {
    const Search *proto;
    bitboard cur, mask;
    int ply, weak, count;
    const int *columns;
    int *lo, *hi, *done;
    int next; /* the next thread's index (atomic) */
    int halt; /* a column is settled: every search stops (atomic) */
    int64_t nodes; /* searched by every thread (atomic) */
} Shared;

/* The tighter of two proven bounds of one position. */
static Bounds tighter(Bounds b, Bounds other) {
    if (other.lo > b.lo) {
        b.lo = other.lo;
        b.best = other.best;
    }
    if (other.hi < b.hi) b.hi = other.hi;
    return b;
}

static void *settle(void *arg) {
    Shared *w = arg;
    Search s = *w->proto;
    s.nodes = 0;
    s.node_limit = NO_NODE_LIMIT;
    s.halt = &w->halt;
    const Geometry *g = s.g;
    /* Thread k takes column k; with more threads than columns, thread k >= count helps
     * column k % count, asking the question beside the one its owner asks. */
    const int k = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
    const int i = k % w->count;
    const bitboard move = possible(g, w->mask) & g->colmask[w->columns[i]];
    const bitboard cur = w->cur ^ w->mask, mask = w->mask | move;
    const int ply = w->ply + 1;
    Bounds b = root_init(g, s.t, s.known, cur, mask, ply);
    s.aborted = 0;
    while (!settled(b, w->weak)) {
        b = root_step_beside(&s, cur, mask, ply, b, w->weak, k >= w->count);
        if (s.aborted) break;
        b = tighter(b, root_init(g, s.t, s.known, cur, mask, ply)); /* what the others proved */
    }
    if (!s.aborted) {
        int open = 0;
        if (__atomic_compare_exchange_n(&w->done[i], &open, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            w->lo[i] = b.lo; /* the first to settle it writes it */
            w->hi[i] = b.hi;
        }
        __atomic_store_n(&w->halt, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_add(&w->nodes, s.nodes, __ATOMIC_RELAXED);
    return NULL;
}

int64_t settle_columns(const Search *proto, bitboard cur, bitboard mask, int ply, int weak,
                       const int *columns, int count, int threads, int *lo, int *hi, int *done,
                       int *aborted) {
    Shared w = {proto, cur, mask, ply, weak, count, columns, lo, hi, done, 0, 0, 0};
    const Geometry *g = proto->g;
    for (int i = 0; i < count; i++) done[i] = 0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 1) threads = 1;
    pthread_t helpers[MAX_THREADS];
    int started = 0;
    for (int k = 1; k < threads; k++) {
        if (pthread_create(&helpers[started], NULL, settle, &w) != 0) break; /* fewer threads */
        started++;
    }
    settle(&w); /* the calling thread is one of them */
    for (int k = 0; k < started; k++) pthread_join(helpers[k], NULL);
    int any = 0;
    for (int i = 0; i < count; i++) {
        any |= done[i];
        if (!done[i]) { /* what was proven of it, by whichever thread, is in the table */
            const bitboard move = possible(g, mask) & g->colmask[columns[i]];
            const Bounds b = root_init(g, proto->t, proto->known, cur ^ mask, mask | move, ply + 1);
            lo[i] = b.lo;
            hi[i] = b.hi;
        }
    }
    *aborted = !any;
    return w.nodes;
}

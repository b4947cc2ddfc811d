/* An analysis's columns settled in threads that share one table.
 *
 * Thread k takes the k-th column given (so the caller gives at most `threads` columns a
 * call, the first ones first), and narrows the position after it with null-window
 * questions (root_init, then root_step) until it is settled; with fewer columns than
 * threads, the extra threads help the first columns, asking the question beside the
 * owner's (root_step_beside), each thread taking up what the others proved (root_init
 * between questions). The table is shared: every entry is one
 * 64-bit word holding only proven facts (table.h), read and written whole, so
 * what one thread proves any other may use, and a race between two stores
 * loses a fact at worst, never makes a wrong one. The known tiers are read-only.
 *
 * The call returns as soon as one column is settled: the other threads stop
 * within CHECK_EVERY nodes, what they proved kept in the table and in their
 * column's bounds, so the caller can report that column and call again for the
 * rest (the stopped work is found again in the table). It also returns once
 * every thread's search is aborted by the deadline (or Core.interrupt). */
#ifndef PLYBOT_COLUMNS_H
#define PLYBOT_COLUMNS_H

#include "root.h"

#define MAX_THREADS 8

/* Settle the positions after `columns[0..count)` of (cur, mask, ply) (each playable, none
 * winning at once; count <= threads: a column no thread takes is not searched), in
 * `threads` threads; `proto`: the search to copy for each (its table, known tiers and
 * deadline; its node counts are not used).
 *
 * On return, for each i: lo[i], hi[i] the bounds of the child's value from its own side
 * to move (weak: settled(.., 1) gives its sign), proven so far; done[i] 1 if settled.
 * Returns the nodes searched; *aborted 1 if no column was settled (the deadline came). */
int64_t settle_columns(const Search *proto, bitboard cur, bitboard mask, int ply, int weak,
                       const int *columns, int count, int threads, int *lo, int *hi, int *done,
                       int *aborted);

#endif

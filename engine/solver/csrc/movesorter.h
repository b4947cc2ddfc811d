/* Move ordering: which move the search tries first (Pons' MoveSorter, in place).
 *
 * Order, best first:
 *   1. the table's move (the one that proved the position's lower bound before);
 *   2. then by the threats a move creates: the number of cells where the mover
 *      would then complete four (Pons' moveScore);
 *   3. ties: centre columns first (g->order), since the insertion is stable.
 *
 * In a race -- the window asks for a quick win (alpha > RACE_TO_WIN) or to
 * escape a quick loss (beta < RACE_TO_SURVIVE) -- a threat right above the
 * move counts twice: the opponent must answer it at once, so such moves force
 * the game and settle races in few nodes (a fifth fewer nodes on Test_L1_R1,
 * the same elsewhere; counting them twice everywhere costs 10% more nodes on
 * the middle-game sets). */
#ifndef PLYBOT_MOVESORTER_H
#define PLYBOT_MOVESORTER_H

#include "position.h"

#define TABLE_MOVE (1 << 20) /* puts the table's move ahead of any threat count */
#define RACE_TO_WIN 4
#define RACE_TO_SURVIVE (-6)

typedef struct {
    int count;
    bitboard moves[MAX_WIDTH]; /* best first */
    bitboard made[MAX_WIDTH];  /* the mover's winning cells after moves[j]: the child's threats */
} MoveSorter;

/* Fill `s` with the moves of `candidates` (playable cells), best first.
 * Precondition: candidates is a subset of possible(g, mask). `tt_move` is a
 * column or -1; `race` counts the threat right above a move twice. */
static inline void sort_moves(MoveSorter *s, const Geometry *g, bitboard cur, bitboard mask,
                              bitboard candidates, int tt_move, int race) {
    int scores[MAX_WIDTH];
    int count = 0;
    for (int k = 0; k < g->width; k++) {
        const int column = g->order[k];
        const bitboard move = candidates & g->colmask[column];
        if (!move) continue;
        const bitboard threats = winning_cells(g, cur | move, mask);
        int score = popcount(threats);
        if (race) score += popcount(threats & (move << 1));
        if (column == tt_move) score = TABLE_MOVE;
        int j = count;
        while (j > 0 && scores[j - 1] < score) {
            s->moves[j] = s->moves[j - 1];
            s->made[j] = s->made[j - 1];
            scores[j] = scores[j - 1];
            j--;
        }
        s->moves[j] = move;
        s->made[j] = threats;
        scores[j] = score;
        count++;
    }
    s->count = count;
}

#endif

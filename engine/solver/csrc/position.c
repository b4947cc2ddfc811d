/* Geometry of one board size: see position.h. */
#include "position.h"

#include <stdlib.h>

int geometry_init(Geometry *g, int width, int height) {
    if (width < 1 || width > MAX_WIDTH || height < 1 || width * (height + 1) > 64) return -1;
    g->width = width;
    g->height = height;
    g->h1 = height + 1;
    g->cells = width * height;
    g->max_stones = (g->cells + 1) / 2;
    g->key_bits = width * g->h1;
    g->wide = width >= 4;
    g->kmask = g->key_bits >= 64 ? ~(bitboard)0 : (((bitboard)1 << g->key_bits) - 1);
    g->column_bits = g->h1 >= 64 ? ~(bitboard)0 : (((bitboard)1 << g->h1) - 1);
    g->bottom = 0;
    for (int c = 0; c < width; c++) g->bottom |= (bitboard)1 << (c * g->h1);
    const bitboard rows = height >= 64 ? ~(bitboard)0 : (((bitboard)1 << height) - 1);
    g->board = g->bottom * rows;
    for (int c = 0; c < width; c++) g->colmask[c] = rows << (c * g->h1);
    /* Centre first, ties left first: sort by (|2c - (width - 1)|, c). */
    for (int c = 0; c < width; c++) g->order[c] = c;
    for (int i = 1; i < width; i++) {
        const int c = g->order[i];
        const int dc = abs(2 * c - (width - 1));
        int j = i;
        while (j > 0) {
            const int o = g->order[j - 1];
            const int doo = abs(2 * o - (width - 1));
            if (doo < dc || (doo == dc && o < c)) break;
            g->order[j] = o;
            j--;
        }
        g->order[j] = c;
    }
    return 0;
}

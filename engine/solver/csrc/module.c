/* engine.solver._core: the compiled solver's Python face (one Core per board size).
 *
 * A Core owns a board size's geometry and transposition table, and may hold
 * views of known exact scores (the opening book's arrays, later a database's;
 * kept alive here), asked at the root and inside every search.
 * Every search releases the GIL; one search at a time per Core (the caller's
 * contract: engine.solver.Solver is not thread-safe), but interrupt() and the
 * deadline may be set from any thread while one runs.
 *
 * Positions cross as (current, mask, ply) integers of position.h's layout,
 * the same numbers as engine.connect4.Connect4's bitboards. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "known.h"
#include "root.h"

typedef struct {
    PyObject_HEAD
    Geometry g;
    Table t;
    KnownSet known;
    Py_buffer known_buffers[MAX_KNOWN][3]; /* keys, scores, best of each tier (a database: values) */
    int known_views[MAX_KNOWN];            /* buffers held by each tier: 3, or 1 for a database */
    Ranking rankings[MAX_KNOWN];           /* a database tier's ranking (zeroed otherwise) */
    Database databases[MAX_KNOWN];
    volatile double deadline; /* read by a running search: interrupt() moves it to -inf */
} Core;

static void drop_known(Core *self) {
    for (int i = 0; i < self->known.count; i++) {
        for (int j = 0; j < self->known_views[i]; j++) PyBuffer_Release(&self->known_buffers[i][j]);
        ranking_free(&self->rankings[i]);
    }
    known_set_clear(&self->known, &self->g);
}

static int Core_init(Core *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"width",        "height",    "table_bytes", "near_end_cells",
                            "mirror_cells", "etc_cells", NULL};
    int width, height, near_end = NEAR_END_CELLS, mirror_cells = MIRROR_CELLS,
                       etc = NEAR_END_CELLS;
    Py_ssize_t table_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iin|iii", names, &width, &height,
                                     &table_bytes, &near_end, &mirror_cells, &etc))
        return -1;
    if (geometry_init(&self->g, width, height) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "'%dx%d': the solver needs 1 <= width <= 9, height >= 1 and "
                     "(height + 1) * width <= 64",
                     width, height);
        return -1;
    }
    if (table_bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "table_bytes must not be negative");
        return -1;
    }
    drop_known(self); /* a new size: views of the last size's positions mean nothing */
    table_free(&self->t);
    if (table_init(&self->t, &self->g, (size_t)table_bytes, near_end, mirror_cells, etc) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    self->deadline = INFINITY;
    return 0;
}

static void Core_dealloc(Core *self) {
    drop_known(self);
    table_free(&self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int arg_bitboard(PyObject *o, bitboard *out) {
    const unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    *out = v;
    return 1;
}

static Search new_search(Core *self, long long nodes, long long node_limit) {
    Search s = {0};
    s.g = &self->g;
    s.t = &self->t;
    s.known = &self->known;
    s.deadline = &self->deadline;
    s.nodes = nodes;
    s.node_limit = node_limit;
    return s;
}

/* The (cur, mask, ply) arguments of a position; 0 with an exception set if they are not. */
static int position_args(PyObject *args, bitboard *cur, bitboard *mask, int *ply) {
    PyObject *co, *mo;
    return PyArg_ParseTuple(args, "OOi", &co, &mo, ply) && arg_bitboard(co, cur) &&
           arg_bitboard(mo, mask);
}

PyDoc_STRVAR(init_doc, "init(cur, mask, ply) -> (lo, hi, best)\n\n"
                       "Initial bounds of an unfinished position from the rules and the table.");
static PyObject *Core_init_bounds(Core *self, PyObject *args) {
    int ply;
    bitboard cur, mask;
    if (!position_args(args, &cur, &mask, &ply)) return NULL;
    const Bounds b = root_init(&self->g, &self->t, &self->known, cur, mask, ply);
    return Py_BuildValue("iii", b.lo, b.hi, b.best);
}

PyDoc_STRVAR(known_doc, "known(cur, mask, ply) -> (score, best) or None\n\n"
                        "What the known scores (add_known) say of the position: its exact\n"
                        "score and a best move in its own orientation (-1 if none given).");
static PyObject *Core_known(Core *self, PyObject *args) {
    int ply, score, best;
    bitboard cur, mask;
    if (!position_args(args, &cur, &mask, &ply)) return NULL;
    if (!known_lookup(&self->known, &self->g, cur + mask, ply, &score, &best)) Py_RETURN_NONE;
    return Py_BuildValue("ii", score, best);
}

PyDoc_STRVAR(step_doc,
             "step(cur, mask, ply, lo, hi, best, weak, nodes, node_limit)\n"
             "    -> (lo, hi, best, aborted, nodes)\n\n"
             "One null-window question (precondition: the bounds are not settled).\n"
             "nodes is the count so far; the search stops past node_limit or the deadline.");
static PyObject *Core_step(Core *self, PyObject *args) {
    PyObject *co, *mo;
    int ply, weak;
    long long nodes, node_limit;
    Bounds b;
    bitboard cur, mask;
    if (!PyArg_ParseTuple(args, "OOiiiipLL", &co, &mo, &ply, &b.lo, &b.hi, &b.best, &weak,
                          &nodes, &node_limit) ||
        !arg_bitboard(co, &cur) || !arg_bitboard(mo, &mask))
        return NULL;
    Search s = new_search(self, nodes, node_limit);
    Py_BEGIN_ALLOW_THREADS
    b = root_step(&s, cur, mask, ply, b, weak);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("iiiNL", b.lo, b.hi, b.best, PyBool_FromLong(s.aborted),
                         (long long)s.nodes);
}

PyDoc_STRVAR(settled_doc,
             "settled(cur, mask, ply) -> {column: value, ...}\n\n"
             "The playable columns whose value to the side to move is exact before any\n"
             "search, in column order, from the rules, what is known and the table: init()\n"
             "of the child, negated (a win now; a child a ply past the known tiers: its\n"
             "parents' bound, exact where one plays it as its best: parent_bound, root.h).\n"
             "Columns left out are full or need a search.\n"
             "Precondition: the position is not finished.");
static PyObject *Core_settled(Core *self, PyObject *args) {
    int ply;
    bitboard cur, mask;
    if (!position_args(args, &cur, &mask, &ply)) return NULL;
    const Geometry *g = &self->g;
    if (ply < 0 || ply >= g->cells)
        return PyErr_Format(PyExc_ValueError, "ply %d: the position is finished", ply);
    const bitboard moves = possible(g, mask);
    const bitboard wins = winning_cells(g, cur, mask) & moves;
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    for (int c = 0; c < g->width; c++) {
        const bitboard move = moves & g->colmask[c];
        int value;
        if (!move) continue;
        if (wins & move) {
            value = score_win_now(g, ply);
        } else {
            const Bounds b = root_init(g, &self->t, &self->known, cur ^ mask, mask | move, ply + 1);
            if (b.lo != b.hi) continue;
            value = -b.lo;
        }
        PyObject *key = PyLong_FromLong(c), *item = PyLong_FromLong(value);
        const int failed = !key || !item || PyDict_SetItem(out, key, item) < 0;
        Py_XDECREF(key);
        Py_XDECREF(item);
        if (failed) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

PyDoc_STRVAR(settle_columns_doc,
             "settle_columns(cur, mask, ply, columns, weak, threads)\n"
             "    -> ([(lo, hi, done), ...], nodes, aborted)\n\n"
             "Narrow the positions after `columns` (playable, none winning at once) in up to\n"
             "`threads` threads sharing the table (columns.h), until one is settled (the\n"
             "others stop, what they proved kept) or the deadline comes (aborted: none\n"
             "settled). Each child's bounds from its own side to move, and whether settled.");
static PyObject *Core_settle_columns(Core *self, PyObject *args) {
    PyObject *co, *mo, *list;
    int ply, weak, threads;
    bitboard cur, mask;
    if (!PyArg_ParseTuple(args, "OOiO!pi", &co, &mo, &ply, &PyList_Type, &list, &weak,
                          &threads) ||
        !arg_bitboard(co, &cur) || !arg_bitboard(mo, &mask))
        return NULL;
    const Geometry *g = &self->g;
    if (ply < 0 || ply >= g->cells)
        return PyErr_Format(PyExc_ValueError, "ply %d: the position is finished", ply);
    const Py_ssize_t count = PyList_GET_SIZE(list);
    if (count < 1 || count > g->width)
        return PyErr_Format(PyExc_ValueError, "%zd columns: expected 1 to %d", count, g->width);
    int columns[MAX_WIDTH], lo[MAX_WIDTH], hi[MAX_WIDTH], done[MAX_WIDTH];
    const bitboard moves = possible(g, mask);
    const bitboard wins = winning_cells(g, cur, mask) & moves;
    for (Py_ssize_t i = 0; i < count; i++) {
        const long c = PyLong_AsLong(PyList_GET_ITEM(list, i));
        if (c == -1 && PyErr_Occurred()) return NULL;
        if (c < 0 || c >= g->width || !(moves & g->colmask[c]) || (wins & g->colmask[c]))
            return PyErr_Format(PyExc_ValueError,
                                "column %ld: not a playable column that does not win at once", c);
        columns[i] = (int)c;
    }
    const Search proto = new_search(self, 0, NO_NODE_LIMIT);
    int aborted;
    int64_t nodes;
    Py_BEGIN_ALLOW_THREADS
    nodes = settle_columns(&proto, cur, mask, ply, weak, columns, (int)count, threads, lo, hi,
                           done, &aborted);
    Py_END_ALLOW_THREADS
    PyObject *out = PyList_New(count);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = Py_BuildValue("iiN", lo[i], hi[i], PyBool_FromLong(done[i]));
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return Py_BuildValue("NLN", out, (long long)nodes, PyBool_FromLong(aborted));
}

PyDoc_STRVAR(line_doc,
             "line(cur, mask, ply, score, nodes, node_limit) -> (moves, aborted, nodes)\n\n"
             "The principal variation of a position whose exact score is `score` (from\n"
             "its side to move; precondition: not finished): its columns until the game\n"
             "ends, or as far as it got once the node limit or the deadline came.");
static PyObject *Core_line(Core *self, PyObject *args) {
    PyObject *co, *mo;
    int ply, score;
    long long nodes, node_limit;
    bitboard cur, mask;
    if (!PyArg_ParseTuple(args, "OOiiLL", &co, &mo, &ply, &score, &nodes, &node_limit) ||
        !arg_bitboard(co, &cur) || !arg_bitboard(mo, &mask))
        return NULL;
    if (ply < 0 || ply >= self->g.cells)
        return PyErr_Format(PyExc_ValueError, "ply %d: the position is finished", ply);
    int line[64];
    int n;
    Search s = new_search(self, nodes, node_limit);
    Py_BEGIN_ALLOW_THREADS
    n = principal_line(&s, cur, mask, ply, score, line);
    Py_END_ALLOW_THREADS
    PyObject *moves = PyList_New(n);
    if (!moves) return NULL;
    for (int i = 0; i < n; i++) PyList_SET_ITEM(moves, i, PyLong_FromLong(line[i]));
    return Py_BuildValue("NNL", moves, PyBool_FromLong(s.aborted), (long long)s.nodes);
}

enum { F_STATUS, F_SCORE, F_LOWER, F_UPPER, F_BEST, F_NODES, FIELDS };

PyDoc_STRVAR(batch_doc,
             "batch(notations, weak, analyze, strict, node_limit)\n"
             "    -> (status, score, lower, upper, best, nodes, seconds, columns)\n\n"
             "Parse and solve every notation (a list of str) in one call, each a list\n"
             "by position (columns: a list of width scores each, or None without analyze).\n"
             "With strict, nothing is solved if any notation is bad. Once a limit comes,\n"
             "the position in hand and those after it are ABORTED.");
static PyObject *Core_batch(Core *self, PyObject *args) {
    PyObject *list;
    int weak, analyze, strict;
    long long node_limit;
    if (!PyArg_ParseTuple(args, "O!pppL", &PyList_Type, &list, &weak, &analyze, &strict,
                          &node_limit))
        return NULL;
    const Py_ssize_t count = PyList_GET_SIZE(list);
    const int width = self->g.width;
    /* Copy the text out under the GIL: the list may change once it is released. */
    size_t total = 0;
    size_t *starts = PyMem_RawMalloc((size_t)(count + 1) * sizeof(size_t));
    if (!starts) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyUnicode_Check(item)) {
            PyMem_RawFree(starts);
            return PyErr_Format(PyExc_TypeError, "notation %zd is not a str", i);
        }
        Py_ssize_t n;
        if (!PyUnicode_AsUTF8AndSize(item, &n)) {
            PyMem_RawFree(starts);
            return NULL;
        }
        starts[i] = total;
        total += (size_t)n;
    }
    starts[count] = total;
    char *text = PyMem_RawMalloc(total + 1);
    int64_t *out = PyMem_RawCalloc((size_t)count * FIELDS + 1, sizeof(int64_t));
    double *seconds = PyMem_RawCalloc((size_t)count + 1, sizeof(double));
    int *columns = PyMem_RawCalloc(analyze ? (size_t)count * width + 1 : 1, sizeof(int));
    if (!text || !out || !seconds || !columns) {
        PyMem_RawFree(starts);
        PyMem_RawFree(text);
        PyMem_RawFree(out);
        PyMem_RawFree(seconds);
        PyMem_RawFree(columns);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(list, i), &n);
        memcpy(text + starts[i], utf8, (size_t)n);
    }
    Search s = new_search(self, 0, node_limit);
    Py_BEGIN_ALLOW_THREADS
    int bad = 0, aborted = 0;
    bitboard cur, mask;
    int ply;
    for (Py_ssize_t p = 0; p < count; p++) {
        const int status =
            parse_moves(&self->g, text + starts[p], starts[p + 1] - starts[p], &cur, &mask, &ply);
        out[p * FIELDS + F_STATUS] = status;
        bad |= status != STATUS_OK;
    }
    for (Py_ssize_t p = 0; p < count && !(strict && bad); p++) {
        int64_t *row = out + p * FIELDS;
        if (row[F_STATUS] != STATUS_OK) continue;
        if (aborted) {
            row[F_STATUS] = STATUS_ABORTED;
            continue;
        }
        parse_moves(&self->g, text + starts[p], starts[p + 1] - starts[p], &cur, &mask, &ply);
        const int64_t start_nodes = s.nodes;
        const double t0 = monotonic_seconds();
        int lo, hi, best;
        if (analyze) {
            int *scores = columns + p * width;
            best = analyze_position(&s, cur, mask, ply, weak, scores);
            lo = -99;
            for (int c = 0; c < width; c++)
                if (scores[c] > lo) lo = scores[c];
            hi = lo;
        } else {
            const Bounds b = solve_position(&s, cur, mask, ply, weak, NO_FLOOR);
            lo = b.lo;
            hi = b.hi;
            best = b.best;
            if (weak && !s.aborted) lo = hi = weak_value(b);
        }
        seconds[p] = monotonic_seconds() - t0;
        row[F_NODES] = s.nodes - start_nodes;
        if (s.aborted) {
            aborted = 1;
            row[F_STATUS] = STATUS_ABORTED;
            continue;
        }
        row[F_SCORE] = lo;
        row[F_LOWER] = lo;
        row[F_UPPER] = hi;
        row[F_BEST] = best;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = PyTuple_New(8);
    for (int f = 0; result && f < FIELDS; f++) {
        PyObject *column = PyList_New(count);
        if (!column) {
            Py_CLEAR(result);
            break;
        }
        for (Py_ssize_t p = 0; p < count; p++)
            PyList_SET_ITEM(column, p, PyLong_FromLongLong(out[p * FIELDS + f]));
        PyTuple_SET_ITEM(result, f, column);
    }
    if (result) {
        PyObject *times = PyList_New(count);
        for (Py_ssize_t p = 0; times && p < count; p++)
            PyList_SET_ITEM(times, p, PyFloat_FromDouble(seconds[p]));
        PyObject *rows = Py_None;
        Py_INCREF(Py_None);
        if (analyze) {
            Py_DECREF(Py_None);
            rows = PyList_New(count);
            for (Py_ssize_t p = 0; rows && p < count; p++) {
                PyObject *row = PyList_New(width);
                for (int c = 0; row && c < width; c++)
                    PyList_SET_ITEM(row, c, PyLong_FromLong(columns[p * width + c]));
                PyList_SET_ITEM(rows, p, row);
            }
        }
        PyTuple_SET_ITEM(result, 6, times);
        PyTuple_SET_ITEM(result, 7, rows);
    }
    PyMem_RawFree(starts);
    PyMem_RawFree(text);
    PyMem_RawFree(out);
    PyMem_RawFree(seconds);
    PyMem_RawFree(columns);
    return result;
}

PyDoc_STRVAR(put_doc, "put(key, empty, lower, upper, move, work)\n\n"
                      "Record lower <= s <= upper for the position of key (cur + mask) with\n"
                      "`empty` empty cells; move (or -1) proves lower; work: priority 0..63.");
static PyObject *Core_put(Core *self, PyObject *args) {
    PyObject *ko;
    bitboard key;
    int empty, lower, upper, move, work;
    if (!PyArg_ParseTuple(args, "Oiiiii", &ko, &empty, &lower, &upper, &move, &work) ||
        !arg_bitboard(ko, &key))
        return NULL;
    if (work < 0 || work > 63 || move < -1 || move >= self->g.width) {
        PyErr_SetString(PyExc_ValueError, "put: work must be 0..63 and move -1..width-1");
        return NULL;
    }
    int flipped;
    const bitboard filed = table_canonical(&self->t, &self->g, key, empty, &flipped);
    table_store(&self->t, &self->g, filed, empty, lower, upper, oriented(&self->g, move, flipped),
                work);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(get_doc, "get(key, empty) -> the raw table entry of the position, or 0.");
static PyObject *Core_get(Core *self, PyObject *args) {
    PyObject *ko;
    bitboard key;
    int empty;
    if (!PyArg_ParseTuple(args, "Oi", &ko, &empty) || !arg_bitboard(ko, &key)) return NULL;
    int flipped;
    const bitboard filed = table_canonical(&self->t, &self->g, key, empty, &flipped);
    return PyLong_FromUnsignedLongLong(table_probe(&self->t, &self->g, filed, empty));
}

PyDoc_STRVAR(add_known_doc,
             "add_known(keys, scores, best)\n\n"
             "Ask these exact scores at the root and inside every search, after the tiers\n"
             "added before (keys: uint64 canonical keys, strictly increasing; scores: int8;\n"
             "best: int8 canonical columns; C-contiguous buffers, such as array.array or a\n"
             "memory map, kept alive until clear_known). At most 4 tiers.");
static PyObject *Core_add_known(Core *self, PyObject *args) {
    PyObject *objects[3];
    if (!PyArg_ParseTuple(args, "OOO", &objects[0], &objects[1], &objects[2])) return NULL;
    if (self->known.count >= MAX_KNOWN) {
        PyErr_SetString(PyExc_ValueError, "add_known: the core holds 4 tiers already");
        return NULL;
    }
    Py_buffer *views = self->known_buffers[self->known.count];
    for (int j = 0; j < 3; j++) {
        if (PyObject_GetBuffer(objects[j], &views[j], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            while (j-- > 0) PyBuffer_Release(&views[j]);
            return NULL;
        }
    }
    const Py_ssize_t n = views[0].len / 8;
    if (views[0].itemsize != 8 || views[1].itemsize != 1 || views[2].itemsize != 1 ||
        views[1].len != n || views[2].len != n) {
        for (int j = 0; j < 3; j++) PyBuffer_Release(&views[j]);
        PyErr_SetString(PyExc_ValueError,
                        "add_known: keys must be 8-byte, scores and best 1-byte items, "
                        "as many of each");
        return NULL;
    }
    Known k;
    known_init(&k, &self->g, views[0].buf, views[1].buf, views[2].buf, (size_t)n);
    self->known_views[self->known.count] = 3;
    known_set_add(&self->known, &k);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(add_database_doc,
             "add_database(stones, values)\n\n"
             "Ask a stones database (database.h: one byte a slot, 0xFF unknown) at every\n"
             "position with `stones` stones, after the tiers added before; values: a\n"
             "C-contiguous buffer of exactly database_size(width, height, stones) bytes,\n"
             "such as a memory map, kept alive until clear_known.");
static PyObject *Core_add_database(Core *self, PyObject *args) {
    int stones;
    PyObject *values;
    if (!PyArg_ParseTuple(args, "iO", &stones, &values)) return NULL;
    const int i = self->known.count;
    if (i >= MAX_KNOWN) {
        PyErr_SetString(PyExc_ValueError, "add_database: the core holds 4 tiers already");
        return NULL;
    }
    if (ranking_init(&self->rankings[i], &self->g, stones) < 0) {
        PyErr_Format(PyExc_ValueError, "add_database: no %d-stone database on %dx%d", stones,
                     self->g.width, self->g.height);
        return NULL;
    }
    Py_buffer *view = &self->known_buffers[i][0];
    if (PyObject_GetBuffer(values, view, PyBUF_C_CONTIGUOUS) < 0) {
        ranking_free(&self->rankings[i]);
        return NULL;
    }
    if ((size_t)view->len != self->rankings[i].slots) {
        PyErr_Format(PyExc_ValueError, "add_database: %zd bytes given, the %d-stone database has %zu",
                     view->len, stones, self->rankings[i].slots);
        PyBuffer_Release(view);
        ranking_free(&self->rankings[i]);
        return NULL;
    }
    self->databases[i].ranking = &self->rankings[i];
    self->databases[i].values = view->buf;
    Known k;
    known_init_database(&k, &self->databases[i]);
    self->known_views[i] = 1;
    known_set_add(&self->known, &k);
    Py_RETURN_NONE;
}

static PyObject *Core_clear_known(Core *self, PyObject *Py_UNUSED(ignored)) {
    drop_known(self);
    Py_RETURN_NONE;
}

static PyObject *Core_interrupt(Core *self, PyObject *Py_UNUSED(ignored)) {
    self->deadline = -INFINITY;
    Py_RETURN_NONE;
}

static PyObject *Core_reset(Core *self, PyObject *Py_UNUSED(ignored)) {
    Py_BEGIN_ALLOW_THREADS
    table_reset(&self->t);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Core_populate(Core *self, PyObject *Py_UNUSED(ignored)) {
    Py_BEGIN_ALLOW_THREADS
    table_populate(&self->t);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Core_get_deadline(Core *self, void *Py_UNUSED(c)) {
    return PyFloat_FromDouble(self->deadline);
}

static int Core_set_deadline(Core *self, PyObject *value, void *Py_UNUSED(c)) {
    const double d = value == NULL || value == Py_None ? INFINITY : PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    self->deadline = d;
    return 0;
}

static PyObject *Core_get_int(Core *self, void *field) {
    switch ((intptr_t)field) {
    case 0: return PyLong_FromLong(self->g.width);
    case 1: return PyLong_FromLong(self->g.height);
    case 2: return PyLong_FromLong(self->g.key_bits);
    case 3: return PyLong_FromSize_t(self->t.count * sizeof(uint64_t));
    default: return PyLong_FromLong(self->known.max_ply);
    }
}

static PyMethodDef Core_methods[] = {
    {"init", (PyCFunction)Core_init_bounds, METH_VARARGS, init_doc},
    {"step", (PyCFunction)Core_step, METH_VARARGS, step_doc},
    {"known", (PyCFunction)Core_known, METH_VARARGS, known_doc},
    {"settled", (PyCFunction)Core_settled, METH_VARARGS, settled_doc},
    {"settle_columns", (PyCFunction)Core_settle_columns, METH_VARARGS, settle_columns_doc},
    {"line", (PyCFunction)Core_line, METH_VARARGS, line_doc},
    {"batch", (PyCFunction)Core_batch, METH_VARARGS, batch_doc},
    {"put", (PyCFunction)Core_put, METH_VARARGS, put_doc},
    {"get", (PyCFunction)Core_get, METH_VARARGS, get_doc},
    {"add_known", (PyCFunction)Core_add_known, METH_VARARGS, add_known_doc},
    {"add_database", (PyCFunction)Core_add_database, METH_VARARGS, add_database_doc},
    {"clear_known", (PyCFunction)Core_clear_known, METH_NOARGS,
     "Forget every tier of known scores (and release their buffers)."},
    {"interrupt", (PyCFunction)Core_interrupt, METH_NOARGS,
     "End the search in progress (safe from any thread): the deadline becomes -inf."},
    {"reset", (PyCFunction)Core_reset, METH_NOARGS, "Forget everything the table holds."},
    {"populate", (PyCFunction)Core_populate, METH_NOARGS,
     "Fault every page of the table in now (what it holds unchanged)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"deadline", (getter)Core_get_deadline, (setter)Core_set_deadline,
     "Absolute deadline on time.monotonic() of the searches (inf: none).", NULL},
    {"width", (getter)Core_get_int, NULL, "Board width.", (void *)0},
    {"height", (getter)Core_get_int, NULL, "Board height.", (void *)1},
    {"key_bits", (getter)Core_get_int, NULL, "Bits of a key: width * (height + 1).", (void *)2},
    {"table_bytes", (getter)Core_get_int, NULL, "Bytes of the transposition table.", (void *)3},
    {"known_max_ply", (getter)Core_get_int, NULL,
     "The deepest ply of the known scores consulted in the search (-1: none).", (void *)4},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "engine.solver._core.Core",
    .tp_doc = PyDoc_STR("Core(width, height, table_bytes, near_end_cells=18, mirror_cells=28, "
                        "etc_cells=18): one board size's search and table."),
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

PyDoc_STRVAR(prefix_sums_doc,
             "prefix_sums(gaps, keys) -> bool\n\n"
             "keys[i] = gaps[0] + ... + gaps[i] (both buffers of native uint64, as many of each;\n"
             "keys writable): the book file's keys from the gaps it stores. True if the keys\n"
             "are strictly increasing (no gap after the first is 0, and no sum wraps).");
static PyObject *prefix_sums(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer in, out;
    if (!PyArg_ParseTuple(args, "y*w*", &in, &out)) return NULL;
    if (in.len != out.len || in.len % 8 != 0) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "prefix_sums: two buffers of as many 8-byte items");
        return NULL;
    }
    const Py_ssize_t n = in.len / 8;
    int increasing = 1;
    uint64_t sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t gap;
        memcpy(&gap, (const char *)in.buf + 8 * i, 8); /* the bytes object may be unaligned */
        if (i > 0 && gap == 0) increasing = 0;
        if (sum + gap < sum) increasing = 0;
        sum += gap;
        memcpy((char *)out.buf + 8 * i, &sum, 8);
    }
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    return PyBool_FromLong(increasing);
}

static int geometry_arg(Geometry *g, int width, int height) {
    if (geometry_init(g, width, height) < 0) {
        PyErr_Format(PyExc_ValueError, "'%dx%d': not a board the solver plays", width, height);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(database_size_doc,
             "database_size(width, height, stones) -> slots\n\n"
             "Bytes of the stones database of that board (ValueError if it cannot exist).");
static PyObject *database_size(PyObject *Py_UNUSED(module), PyObject *args) {
    int width, height, stones;
    Geometry g;
    Ranking r;
    if (!PyArg_ParseTuple(args, "iii", &width, &height, &stones) || !geometry_arg(&g, width, height))
        return NULL;
    if (ranking_init(&r, &g, stones) < 0) {
        PyErr_Format(PyExc_ValueError, "no %d-stone database on %dx%d", stones, width, height);
        return NULL;
    }
    const size_t slots = r.slots;
    ranking_free(&r);
    return PyLong_FromSize_t(slots);
}

PyDoc_STRVAR(database_slots_doc,
             "database_slots(width, height, stones, keys) -> (slots, flipped)\n\n"
             "The slot of each key (native uint64 keys, cur + mask, each with `stones` stones)\n"
             "as native uint32, and 1 where the slot holds the mirror image (uint8).");
static PyObject *database_slots(PyObject *Py_UNUSED(module), PyObject *args) {
    int width, height, stones;
    Py_buffer in;
    Geometry g;
    Ranking r;
    if (!PyArg_ParseTuple(args, "iiiy*", &width, &height, &stones, &in)) return NULL;
    if (!geometry_arg(&g, width, height) || ranking_init(&r, &g, stones) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "no %d-stone database on %dx%d", stones, width, height);
        PyBuffer_Release(&in);
        return NULL;
    }
    const Py_ssize_t n = in.len / 8;
    PyObject *slots = PyBytes_FromStringAndSize(NULL, n * 4), *flips = PyBytes_FromStringAndSize(NULL, n);
    if (!slots || !flips) goto fail;
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(slots);
    uint8_t *flipped = (uint8_t *)PyBytes_AS_STRING(flips);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key;
        memcpy(&key, (const char *)in.buf + 8 * i, 8);
        int heights[MAX_WIDTH], total = 0, valid = (key & ~g.kmask) == 0;
        column_heights(&g, key, heights);
        for (int c = 0; c < width; c++) {
            total += heights[c];
            valid &= heights[c] >= 0;
        }
        if (!valid || total != stones) {
            PyErr_Format(PyExc_ValueError, "database_slots: key %llu has %d stones, not %d",
                         (unsigned long long)key, total, stones);
            goto fail;
        }
        int f;
        out[i] = (uint32_t)ranking_slot(&r, &g, key, &f);
        flipped[i] = (uint8_t)f;
    }
    ranking_free(&r);
    PyBuffer_Release(&in);
    return Py_BuildValue("(NN)", slots, flips);
fail:
    Py_XDECREF(slots);
    Py_XDECREF(flips);
    ranking_free(&r);
    PyBuffer_Release(&in);
    return NULL;
}

static PyObject *keys_bytes(uint64_t *keys, size_t n) {
    PyObject *b = PyBytes_FromStringAndSize((const char *)keys, (Py_ssize_t)(n * sizeof *keys));
    free(keys);
    return b;
}

PyDoc_STRVAR(layer_keys_doc,
             "layer_keys(width, height, ply) -> bytes\n\n"
             "The canonical keys (native uint64, ascending) of every ongoing position after\n"
             "`ply` moves, one per mirror pair.");
static PyObject *py_layer_keys(PyObject *Py_UNUSED(module), PyObject *args) {
    int width, height, ply;
    Geometry g;
    if (!PyArg_ParseTuple(args, "iii", &width, &height, &ply) || !geometry_arg(&g, width, height))
        return NULL;
    if (ply < 0 || ply > g.cells) {
        PyErr_Format(PyExc_ValueError, "layer_keys: ply %d is not 0..%d", ply, g.cells);
        return NULL;
    }
    uint64_t *keys;
    size_t n;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = layer_keys(&g, ply, &keys, &n);
    Py_END_ALLOW_THREADS
    if (status < 0) return PyErr_NoMemory();
    return keys_bytes(keys, n);
}

PyDoc_STRVAR(layer_plan_doc,
             "layer_plan(width, height, ply, size) -> (keys, starts)\n\n"
             "The positions after `ply` moves a solver must search, in build order, and where\n"
             "each chunk of about `size` starts (both native uint64; starts ends with the\n"
             "count of keys): see database.h.");
static PyObject *py_layer_plan(PyObject *Py_UNUSED(module), PyObject *args) {
    int width, height, ply;
    Py_ssize_t size;
    Geometry g;
    if (!PyArg_ParseTuple(args, "iiin", &width, &height, &ply, &size) ||
        !geometry_arg(&g, width, height))
        return NULL;
    if (ply < 1 || ply >= g.cells || size < 1) {
        PyErr_Format(PyExc_ValueError, "layer_plan: needs 1 <= ply < %d and size >= 1", g.cells);
        return NULL;
    }
    uint64_t *keys, *starts;
    size_t n, chunks;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = layer_plan(&g, ply, (size_t)size, &keys, &n, &starts, &chunks);
    Py_END_ALLOW_THREADS
    if (status < 0) return PyErr_NoMemory();
    return Py_BuildValue("(NN)", keys_bytes(keys, n), keys_bytes(starts, chunks + 1));
}

static PyMethodDef core_functions[] = {
    {"prefix_sums", prefix_sums, METH_VARARGS, prefix_sums_doc},
    {"database_size", database_size, METH_VARARGS, database_size_doc},
    {"database_slots", database_slots, METH_VARARGS, database_slots_doc},
    {"layer_keys", py_layer_keys, METH_VARARGS, layer_keys_doc},
    {"layer_plan", py_layer_plan, METH_VARARGS, layer_plan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "engine.solver._core",
    "The exact Connect Four solver, compiled ahead of time (see engine/solver/csrc/).", -1,
    core_functions, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "FULL", FULL_COLUMN);
    PyModule_AddIntConstant(m, "OK", STATUS_OK);
    PyModule_AddIntConstant(m, "ABORTED", STATUS_ABORTED);
    PyModule_AddIntConstant(m, "NEAR_END_BYTES", NEAR_END_BYTES);
    PyModule_AddIntConstant(m, "CHECK_EVERY", CHECK_EVERY);
    PyModule_AddIntConstant(m, "DB_UNKNOWN", DB_UNKNOWN);
    return m;
}

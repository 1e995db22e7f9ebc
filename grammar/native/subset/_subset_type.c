/* The `SubsetCore` type of the subset core: its init (reading the NFA's regions, interning the
 * DEAD and START states), dealloc, and the methods Python calls (`closure`, `intern`, `rows`,
 * `locate`, `in_open`, `accepting_from`, `loaded`).
 */
#include "_subset_core.h"

static void core_dealloc(Core *c) {
    Py_XDECREF(c->moves);
    Py_XDECREF(c->regions_obj);
    Py_XDECREF(c->sets);
    free(c->regions);
    subset_slots_free(c);
    free(c->table);
    free(c->shape_table);
    Pool *pools[] = {&c->edge_pool, &c->eps_pool, &c->clo_pool, &c->set_pool, &c->set_at, &c->set_n,
                     &c->set_hash, &c->set_acc, &c->shape_pool, &c->shape_at, &c->shape_n, &c->shape_hash,
                     &c->shape_scratch, &c->keyed_starts, &c->open_starts, &c->stack, &c->scratch, &c->gathered, &c->counts, &c->targets};
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) free(pools[i]->data);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int cmp_pair(const void *x, const void *y) {
    const int32_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* An int argument in [0, limit), or -1 with a ValueError naming `what`. */
static int32_t index_arg(PyObject *arg, Py_ssize_t limit, const char *what) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= limit) {
        PyErr_Format(PyExc_ValueError, "subset core: %s %ld out of range", what, v);
        return -1;
    }
    return (int32_t)v;
}

static PyObject *core_closure(Core *c, PyObject *arg) {
    int32_t q = index_arg(arg, c->num_nfa, "NFA state"), k;
    if (q < 0 || subset_closure(c, q) || (k = slot_of(c, q)) < 0) return NULL;
    return subset_ints_tuple(c->clo_pool.data + c->clo_at[k] - 1, c->clo_n[k]);
}

static PyObject *core_intern(Core *c, PyObject *arg) {
    Py_ssize_t n;
    PyObject **items = items_of(arg, &n, "state set");
    if (!items) return NULL;
    c->scratch.len = 0;
    if (pool_reserve(&c->scratch, n)) return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (int_of(items[i], 0, c->num_nfa, &c->scratch.data[i])) return NULL;
    int32_t sid = intern(c, c->scratch.data, sort_unique(c->scratch.data, n));
    return sid < 0 ? NULL : PyLong_FromLong(sid);
}

static PyObject *core_rows(Core *c, PyObject *args) {
    PyObject *states;
    Py_buffer rows = {0}, expanded = {0};
    if (!PyArg_ParseTuple(args, "Ow*w*", &states, &rows, &expanded)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, height = rows.len / 4 / c->num_classes;
    PyObject **items = items_of(states, &n, "states");
    if (!items) goto done;
    if (rows.len != height * 4 * c->num_classes || expanded.len < height) {
        PyErr_SetString(PyExc_ValueError, "subset core: row table and flags disagree");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t sid;
        if (int_of(items[i], 0, c->set_n.len < height ? c->set_n.len : height, &sid)) goto done;
        if (subset_fill_row(c, sid, (int32_t *)rows.buf + (Py_ssize_t)sid * c->num_classes)) goto done;
        ((uint8_t *)expanded.buf)[sid] = 1;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&expanded);
    return result;
}

static PyObject *core_locate(Core *c, PyObject *arg) {
    int32_t sid = index_arg(arg, c->set_n.len, "DFA state");
    if (sid < 0) return NULL;
    const int32_t *set = c->set_pool.data + c->set_at.data[sid];
    for (int32_t i = 0; i < c->set_n.data[sid]; i++) {
        Py_ssize_t k = find_sorted(c->keyed_starts.data, c->keyed_starts.len / 2, 2, set[i]);
        if (k >= 0) return PyLong_FromLong(c->keyed_starts.data[2 * k + 1]);
        k = region_at(c, set[i]);
        if (k >= 0) return PyLong_FromSsize_t(k);
    }
    return PyLong_FromLong(-1);
}

static PyObject *core_in_open(Core *c, PyObject *arg) {
    int32_t sid = index_arg(arg, c->set_n.len, "DFA state");
    if (sid < 0) return NULL;
    const int32_t *set = c->set_pool.data + c->set_at.data[sid];
    for (int32_t i = 0; i < c->set_n.data[sid] && c->open_starts.len; i++) {
        Py_ssize_t k = region_at(c, set[i]);
        if (find_sorted(c->open_starts.data, c->open_starts.len, 1, set[i]) >= 0 ||
            (k >= 0 && (c->regions[k].flags & REGION_OPEN)))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyObject *core_accepting_from(Core *c, PyObject *arg) {
    Py_ssize_t start = index_arg(arg, c->set_n.len + 1, "DFA state");
    if (start < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, c->set_n.len - start);
    if (!out) return NULL;
    char *flags = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = start; i < c->set_n.len; i++) flags[i - start] = (char)c->set_acc.data[i];
    return out;
}

static PyObject *core_loaded(Core *c, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(c->loaded);
}

static PyObject *core_materialised(Core *c, PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(nn)", c->materialised, c->counted_slots);
}

static PyObject *core_repeated(Core *c, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(c->repeated);
}

/* Reads a counted DFA region's spec (`CountedDFA.spec`): 0, or -1 with a ValueError. */
static int counted_dfa_spec(Core *c, Region *r) {
    PyObject *acc, *tick, *least;
    Py_ssize_t n = -1;
    if (PyTuple_Check(r->b) && PyArg_ParseTuple(r->b, "SSSi", &acc, &tick, &least, &r->hi) &&
        (PyList_Check(r->a) || PyTuple_Check(r->a)))
        n = PySequence_Fast_GET_SIZE(r->a) - 1;
    if (n < 1 || PyBytes_GET_SIZE(acc) != n + 1 || PyBytes_GET_SIZE(tick) != n + 1 ||
        PyBytes_GET_SIZE(least) != 4 * (n + 1) || r->hi < 0 || (int64_t)(r->hi + 1) * n != r->last - r->first) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "subset core: bad counted DFA region");
        }
        return -1;
    }
    r->width = (int32_t)n;
    r->accepting = (const uint8_t *)PyBytes_AS_STRING(acc), r->tick = (const uint8_t *)PyBytes_AS_STRING(tick);
    r->least = (const int32_t *)PyBytes_AS_STRING(least);
    c->num_counted++;
    return 0;
}

static int core_init(Core *c, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    PyObject *moves, *regions, *sets;
    Py_buffer cob = {0};
    int num_classes, start, final, empty;
    if (!PyArg_ParseTuple(args, "O!O!y*iiipO!", &PyBytes_Type, &moves, &PyList_Type, &regions, &cob, &num_classes,
                          &start, &final, &empty, &PyList_Type, &sets))
        return -1;
    int rc = -1;
    if (c->moves) {
        PyErr_SetString(PyExc_RuntimeError, "subset core: already initialised");
        goto done;
    }
    Py_ssize_t num_plain = flat_num_states(moves), num_nfa = num_plain;
    if (num_plain < 0) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(regions); i++) { /* regions' states follow the NFA's own */
        PyObject *spec = PyList_GET_ITEM(regions, i), *last = PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) > 1 ?
                                                             PyTuple_GET_ITEM(spec, 1) : NULL;
        Py_ssize_t v = last && PyLong_Check(last) ? PyLong_AsSsize_t(last) : -1;
        if (v > num_nfa) num_nfa = v;
    }
    if (PyErr_Occurred()) goto done;
    if (cob.len != 256 * 4 || num_nfa > INT32_MAX - 64 ||
        num_classes < 1 || num_classes > 256 || start < 0 || start >= num_plain || final < 0 ||
        final >= num_plain || PyList_GET_SIZE(sets) != 0) {
        PyErr_SetString(PyExc_ValueError, "subset core: inconsistent arguments");
        goto done;
    }
    for (int i = 0; i < 256; i++) {
        int32_t k = ((const int32_t *)cob.buf)[i];
        if (k < 0 || k >= num_classes) {
            PyErr_SetString(PyExc_ValueError, "subset core: byte class out of range");
            goto done;
        }
        c->class_of_byte[i] = k;
    }
    c->num_classes = num_classes, c->final = final, c->num_nfa = (int32_t)num_nfa, c->hidden = -1;
    c->num_plain = (int32_t)num_plain;
    /* the specs, kept with the core, hold ints, bytes, None and tuples of them (`NFA.region_specs`):
     * nothing a cycle could pass through, so the collector need not scan them nor their list (a
     * young collection would, ~8 fields a region of every document compiled since the last one) */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(regions); i++) {
        PyObject *spec = PyList_GET_ITEM(regions, i);
        if (PyTuple_CheckExact(spec) && PyObject_GC_IsTracked(spec)) PyObject_GC_UnTrack(spec);
    }
    if (PyList_CheckExact(regions) && PyObject_GC_IsTracked(regions)) PyObject_GC_UnTrack(regions);
    /* `sets` only ever holds the untracked tuples of ints the core appends (`_subset_sets.c`) */
    if (PyList_CheckExact(sets) && PyObject_GC_IsTracked(sets)) PyObject_GC_UnTrack(sets);
    Py_INCREF(moves), Py_INCREF(regions), Py_INCREF(sets);
    c->moves = moves, c->regions_obj = regions, c->sets = sets;
    c->num_regions = PyList_GET_SIZE(regions);
    c->regions = calloc((size_t)c->num_regions + 1, sizeof(Region));
    if (!c->regions) goto nomem;
    if (subset_slots_init(c)) goto done;
    for (Py_ssize_t i = 0; i < c->num_regions; i++) {
        Region *r = &c->regions[i];
        PyObject *spec = PyList_GET_ITEM(regions, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 8 ||
            !PyArg_ParseTuple(spec, "iiiiiiOO", &r->first, &r->last, &r->end, &r->start, &r->kind, &r->flags,
                              &r->a, &r->b)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "subset core: bad region");
            goto done;
        }
        if (r->first < num_plain || r->last <= r->first || r->last > num_nfa || r->end < 0 || r->end >= num_plain ||
            r->start < 0 || r->start >= num_plain ||
            r->kind < REGION_DFA || r->kind > REGION_COUNTED_DFA ||
            (i && r->first < c->regions[i - 1].last) || (r->kind == REGION_DFA && !PyBytes_Check(r->b))) {
            PyErr_SetString(PyExc_ValueError, "subset core: bad region");
            goto done;
        }
        if ((r->kind == REGION_TEMPLATE || r->kind == REGION_COUNTED) && (r->size = flat_num_states(r->a)) < 0) goto done;
        if (r->kind == REGION_COUNTED_DFA && counted_dfa_spec(c, r)) goto done;
        if (r->kind == REGION_COUNTED) {
            c->num_counted++;
            r->width = r->size - 1;
            if (!PyTuple_Check(r->b) || !PyArg_ParseTuple(r->b, "ii", &r->lo, &r->hi) || r->size < 2 ||
                r->lo < 0 || r->hi < 1 || r->lo > r->hi || (int64_t)r->hi * r->width + 1 != r->last - r->first) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "subset core: bad counted region");
                goto done;
            }
        }
        if (((r->flags & REGION_KEYS_START) && (pool_push(&c->keyed_starts, r->start) ||
                                                pool_push(&c->keyed_starts, (int32_t)i))) ||
            ((r->flags & REGION_OPEN) && pool_push(&c->open_starts, r->start)))
            goto done;
    }
    /* the (start, region) pairs by start, then region: of equal starts the last region wins */
    int32_t *pairs = c->keyed_starts.data;
    Py_ssize_t kept = 0;
    if (c->keyed_starts.len) qsort(pairs, (size_t)c->keyed_starts.len / 2, 2 * sizeof(int32_t), cmp_pair);
    for (Py_ssize_t i = 0; i < c->keyed_starts.len / 2; i++) {
        if (kept && pairs[2 * (kept - 1)] == pairs[2 * i]) kept--;
        pairs[2 * kept] = pairs[2 * i], pairs[2 * kept + 1] = pairs[2 * i + 1];
        kept++;
    }
    c->keyed_starts.len = 2 * kept;
    c->open_starts.len = sort_unique(c->open_starts.data, c->open_starts.len);
    if (subset_table_grow(c) || subset_shape_table_grow(c)) goto done;
    if (subset_add_set(c, NULL, 0, hash_ints(NULL, 0), 1) < 0) goto done; /* DEAD */
    if (empty) {
        if (subset_add_set(c, NULL, 0, 0, 0) < 0) goto done; /* START, the same empty language */
    } else {
        if (subset_closure(c, start)) goto done; /* start is one of the NFA's own states: its own slot */
        if (intern(c, c->clo_pool.data + c->clo_at[start] - 1, c->clo_n[start]) != 1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "subset core: bad start state");
            goto done;
        }
    }
    rc = 0;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    PyBuffer_Release(&cob);
    return rc;
}

static PyMethodDef core_methods[] = {
    {"closure", (PyCFunction)core_closure, METH_O, "closure(q) -> the sorted tuple of states q reaches by epsilon moves"},
    {"intern", (PyCFunction)core_intern, METH_O, "intern(states) -> the DFA state of a closed set of NFA states"},
    {"rows", (PyCFunction)core_rows, METH_VARARGS,
     "rows(states, rows, expanded): writes each state's successor per byte class into `rows`\n"
     "(int32, one row per DFA state) and sets its flag in `expanded`"},
    {"locate", (PyCFunction)core_locate, METH_O,
     "locate(state) -> the index of the first region (in the set's order) whose start, keyed, or\n"
     "whose inside holds one of the state's NFA states; -1 if none"},
    {"in_open", (PyCFunction)core_in_open, METH_O,
     "in_open(state) -> whether the state holds the start of, or a state inside, an open region"},
    {"accepting_from", (PyCFunction)core_accepting_from, METH_O,
     "accepting_from(state) -> a byte per DFA state from `state` on: 1 if its set holds the final state"},
    {"loaded", (PyCFunction)core_loaded, METH_NOARGS, "loaded() -> how many NFA states' moves were read"},
    {"materialised", (PyCFunction)core_materialised, METH_NOARGS,
     "materialised() -> (regions' states reached (given room in the per-state arrays), of them in\n"
     "counted regions)"},
    {"repeated", (PyCFunction)core_repeated, METH_NOARGS,
     "repeated() -> how many DFA states are an earlier one's place at another count of a counted region"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject subset_core_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "formwork.grammar._subset.SubsetCore",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SubsetCore(moves, regions, class_of_byte, num_classes, start, final, empty, sets)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)core_init,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_methods = core_methods,
};

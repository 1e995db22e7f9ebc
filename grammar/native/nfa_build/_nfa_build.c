/* NFA construction in C: the Thompson NFA of an IR tree (`nfa.NFA`).
 *
 * `build` adds, per IR node, paths from a state s to a state e spelling its language, never adding
 * moves into s or out of e; sub-terms with an empty language add nothing.  States are numbered in
 * the order of a depth-first walk (the reference builder in tests/test_nfa_build.py numbers them
 * alike), and a bounded repetition's later repetitions copy the states of its first one.  Moves
 * live in one array, linked per state, and become the lists of tuples `_subset.c` reads when the
 * build ends.  Python is called back for what needs it: the DFA of an And / Not node (`dfa_of`),
 * a lexeme's template NFA (`template_of`), the budget's checks, and the byte ranges of a DFA
 * embedded whole (`whole`).  Malformed input raises a Python exception.
 */
#include "_nfa_build.h"

/* The walk over the IR tree (`nfab_build` and the builders of each node kind, which append to the
 * arrays of _nfa_moves.c and splice regions in with _nfa_regions.c), and the module glue. */

_Thread_local int nfab_depth;

PyObject *s_empty, *s_items, *s_value, *s_ranges, *s_item, *s_min, *s_max, *s_name, *s_num_states, *s_is_empty,
    *s_moves, *s_counted, *s_check_nfa, *s_check_time, *s_what;

/* Caches whether `node`'s language is empty in its `_empty` slot. */
static int set_empty(PyObject *node, PyObject *value) {
    const Py_ssize_t at = offset_of(node, F_EMPTY);
    if (at < 0) return PyObject_GenericSetAttr(node, s_empty, value);
    Py_XSETREF(*(PyObject **)((char *)node + at), Py_NewRef(value));
    return 0;
}

/* 1 if `node` matches no string at all, 0 if it matches some, -1 on error; cached in the node's
 * `_empty` slot (lowering shares node objects between compilations). */
static int is_empty(Builder *b, PyObject *node) {
    PyObject *cached = get_field(node, F_EMPTY, s_empty);
    if (!cached) return -1;
    Py_DECREF(cached);
    if (cached != Py_None) return cached == Py_True;
    PyTypeObject *kind = Py_TYPE(node);
    int got = 0;
    if (enter()) return -1;
    if (kind == Seq || kind == Alt) { /* Seq: some item empty; Alt: every item empty */
        PyObject *items = get_field(node, F_ITEMS, s_items);
        Py_ssize_t n;
        PyObject **item = items ? items_of(items, &n, "Seq / Alt items", 1) : NULL;
        got = item ? kind == Alt : -1;
        for (Py_ssize_t i = 0; item && i < n; i++) {
            int empty = is_empty(b, item[i]);
            if (empty != got) {
                got = empty < 0 ? -1 : !got;
                break;
            }
        }
        Py_XDECREF(items);
    } else if (kind == Nothing) {
        got = 1;
    } else if (kind == ByteSet) {
        PyObject *ranges = get_field(node, F_RANGES, s_ranges);
        got = ranges ? PyObject_Not(ranges) : -1;
        Py_XDECREF(ranges);
    } else if (kind == Repeat) {
        long long lo, hi;
        PyObject *item = nfab_bounds(node, &lo, &hi) ? NULL : get_field(node, F_ITEM, s_item);
        got = !item ? -1 : lo > 0 ? is_empty(b, item) : 0;
        Py_XDECREF(item);
    } else if (kind == And || kind == Not) {
        PyObject *dfa = PyObject_CallOneArg(b->dfa_of, node);
        PyObject *r = dfa ? PyObject_CallMethodNoArgs(dfa, s_is_empty) : NULL;
        got = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        Py_XDECREF(dfa);
    }
    leave();
    if (got >= 0 && set_empty(node, got ? Py_True : Py_False)) return -1;
    return got;
}

/* One repetition of `item` from cur to nxt: a copy of *p if `*have`, else built, and *p becomes
 * this build unless it spliced regions (which are not copied). */
static int repeat_item(Builder *b, PyObject *item, int32_t cur, int32_t nxt, Proto *p, int *have) {
    if (*have) return nfab_copy(b, p, cur, nxt);
    const Py_ssize_t regions = PyList_GET_SIZE(b->regions);
    const int32_t first = (int32_t)b->n, tail = b->states[cur].tail;
    if (nfab_build(b, item, cur, nxt)) return -1;
    if (PyList_GET_SIZE(b->regions) != regions) return 0;
    *p = (Proto){first, (int32_t)b->n, nxt, b->ns, 0};
    for (int32_t m = tail < 0 ? b->states[cur].head : b->moves[tail].next; m >= 0; m = b->moves[m].next) {
        if (GROW(b, saved, scap, b->ns + 3)) return -1;
        b->saved[b->ns++] = b->moves[m].lo, b->saved[b->ns++] = b->moves[m].hi;
        b->saved[b->ns++] = b->moves[m].target;
        p->n++;
    }
    *have = 1;
    return 0;
}

/* `item{min,max}`. */
static int repeat(Builder *b, PyObject *node, int32_t s, int32_t e) {
    long long lo, hi;
    PyObject *item = nfab_bounds(node, &lo, &hi) ? NULL : get_field(node, F_ITEM, s_item);
    if (!item) return -1;
    const Py_ssize_t saved = b->ns;
    int rc = -1, have = 0, empty = is_empty(b, item);
    Proto proto;
    int32_t cur = s, nxt;
    if (empty) { /* only zero repetitions are possible */
        rc = empty < 0 ? -1 : add(b, s, EPSILON, 0, e);
        goto done;
    }
    for (long long k = 0; k < lo; k++, cur = nxt) {
        if ((nxt = new_state(b)) < 0) goto done;
        if (repeat_item(b, item, cur, nxt, &proto, &have)) goto done;
    }
    if (hi < 0) {
        int32_t loop = new_state(b);
        rc = loop < 0 || add(b, cur, EPSILON, 0, loop) || nfab_build(b, item, loop, loop) ||
             add(b, loop, EPSILON, 0, e);
        goto done;
    }
    if (add(b, cur, EPSILON, 0, e)) goto done;
    for (long long k = 0; k < hi - lo; k++, cur = nxt) {
        if ((nxt = k == hi - lo - 1 ? e : new_state(b)) < 0) goto done;
        if (repeat_item(b, item, cur, nxt, &proto, &have) || (nxt != e && add(b, nxt, EPSILON, 0, e))) goto done;
    }
    rc = 0;
done:
    b->ns = saved;
    Py_DECREF(item);
    return rc ? -1 : 0;
}

/* Bytes: a chain of byte edges through fresh states (an empty value: the empty string). */
static int chain(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *value = get_field(node, F_VALUE, s_value);
    if (!value) return -1;
    int rc = PyBytes_Check(value) ? 0 : -1;
    const Py_ssize_t n = rc ? 0 : PyBytes_GET_SIZE(value);
    if (rc) PyErr_SetString(PyExc_TypeError, "NFA construction: Bytes.value is not bytes");
    else if (!n) rc = add(b, s, EPSILON, 0, e);
    for (Py_ssize_t i = 0, cur = s, nxt; !rc && i < n; i++, cur = nxt) {
        const int32_t byte = (unsigned char)PyBytes_AS_STRING(value)[i];
        rc = (nxt = i == n - 1 ? e : new_state(b)) < 0 || add(b, (int32_t)cur, byte, byte, (int32_t)nxt) ? -1 : 0;
    }
    Py_DECREF(value);
    return rc;
}

/* The item of `node` (a new reference) if it is a plain star item{0,} of a non-empty item, built
 * by `repeat` (not a lexeme or a shared mark); else NULL, with an error set on failure. */
static PyObject *star_item(Builder *b, PyObject *node) {
    long long lo, hi;
    if (Py_TYPE(node) != Repeat) return NULL;
    if (b->template_of != Py_None && node_in(b->lexemes, node)) return NULL; /* 1, or -1 */
    if (node_in(b->shared, node)) return NULL;
    if (nfab_bounds(node, &lo, &hi) || lo != 0 || hi >= 0) return NULL;
    PyObject *item = get_field(node, F_ITEM, s_item);
    const int empty = item ? is_empty(b, item) : -1;
    if (empty) Py_CLEAR(item);
    return item;
}

/* `x item{0,}` within a Seq: x ends at the loop state itself (the state between them would have
 * no other move), so a shared node ending both x and item (an array's element: `e (, e)*`) is
 * built once. */
static int then_star(Builder *b, PyObject *x, PyObject *star, int32_t cur, int32_t nxt) {
    const int32_t loop = new_state(b);
    return loop < 0 || nfab_build(b, x, cur, loop) || nfab_build(b, star, loop, loop) ||
           add(b, loop, EPSILON, 0, nxt) ? -1 : 0;
}

/* Seq (one item after another, through fresh states) or Alt (every item from s to e). */
static int items(Builder *b, PyObject *node, int32_t s, int32_t e, int is_seq) {
    PyObject *items = get_field(node, F_ITEMS, s_items);
    Py_ssize_t n;
    PyObject **item = items ? items_of(items, &n, "Seq / Alt items", 1) : NULL;
    int rc = item ? 0 : -1;
    if (!rc && is_seq && !n) rc = add(b, s, EPSILON, 0, e);
    for (Py_ssize_t i = 0, cur = s; !rc && i < n; i++) {
        PyObject *star = is_seq && i + 1 < n ? star_item(b, item[i + 1]) : NULL;
        if (star || PyErr_Occurred()) {
            const int32_t nxt = i + 1 == n - 1 ? e : new_state(b);
            rc = !star || nxt < 0 ? -1 : then_star(b, item[i], star, (int32_t)cur, nxt);
            Py_XDECREF(star);
            cur = nxt, i++;
            continue;
        }
        const int32_t nxt = !is_seq ? e : i == n - 1 ? e : new_state(b);
        rc = nxt < 0 ? -1 : nfab_build(b, item[i], (int32_t)(is_seq ? cur : s), nxt);
        cur = nxt;
    }
    Py_XDECREF(items);
    return rc;
}

static int byte_set(Builder *b, PyObject *node, int32_t s, int32_t e) {
    PyObject *ranges = get_field(node, F_RANGES, s_ranges);
    Py_ssize_t n;
    PyObject **r = ranges ? items_of(ranges, &n, "ByteSet ranges", 0) : NULL;
    int rc = r ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        int32_t lohi[3];
        rc = byte_range(r[i], 0, 0, lohi) || add(b, s, lohi[0], lohi[1], e) ? -1 : 0;
    }
    Py_XDECREF(ranges);
    return rc;
}

/* A node marked by `shared_nodes.share` (a Repeat{1,1}): built once per end state e, from a fresh
 * entry state that s has an epsilon move into; a later use with the same end state gets an epsilon
 * move into that entry state (the language from it on is the same).  `joins` maps the node (found
 * by `node_hash`) to a dict of end state -> entry state. */
static int shared(Builder *b, PyObject *node, int32_t s, int32_t e) {
    const Py_hash_t h = node_hash(node);
    if (h == -1) return -1;
    PyObject *ends = _PyDict_GetItem_KnownHash(b->joins, node, h), *end = NULL, *item = NULL, *entry = NULL;
    int rc = -1;
    if (ends) {
        Py_INCREF(ends);
    } else if (PyErr_Occurred() || !(ends = PyDict_New()) || _PyDict_SetItem_KnownHash(b->joins, node, ends, h)) {
        Py_XDECREF(ends);
        return -1;
    }
    if (!(end = PyLong_FromLong(e))) goto done;
    PyObject *got = PyDict_GetItemWithError(ends, end);
    if (got) {
        rc = add(b, s, EPSILON, 0, (int32_t)PyLong_AsLong(got));
    } else if (!PyErr_Occurred()) {
        const int32_t q = new_state(b);
        rc = q < 0 || !(item = get_field(node, F_ITEM, s_item)) || !(entry = PyLong_FromLong(q)) ||
             PyDict_SetItem(ends, end, entry) || add(b, s, EPSILON, 0, q) || nfab_build(b, item, q, e) ? -1 : 0;
    }
done:
    Py_XDECREF(entry);
    Py_XDECREF(item);
    Py_XDECREF(end);
    Py_DECREF(ends);
    return rc;
}

/* `dict[node]` (borrowed), found by `node_hash`; NULL if absent or with an exception. */
static PyObject *lookup(PyObject *dict, PyObject *node) {
    const Py_hash_t h = node_hash(node);
    return h == -1 ? NULL : _PyDict_GetItem_KnownHash(dict, node, h);
}

int nfab_build(Builder *b, PyObject *node, int32_t s, int32_t e) {
    int rc = is_empty(b, node);
    if (rc) return rc < 0 ? -1 : 0;
    PyTypeObject *kind = Py_TYPE(node);
    PyObject *lexeme = NULL;
    if (enter()) return -1;
    if (kind == Repeat && b->template_of != Py_None && PyDict_GET_SIZE(b->lexemes) &&
        (lexeme = lookup(b->lexemes, node))) { /* lexeme -> whether it is open-ended */
        Py_INCREF(lexeme);
        int open = PyObject_IsTrue(lexeme);
        rc = open < 0 ? -1 : nfab_splice(b, node, s, e, open);
        Py_DECREF(lexeme);
    } else if (PyErr_Occurred()) {
        rc = -1;
    } else if (kind == Repeat && (rc = node_in(b->shared, node))) {
        rc = rc < 0 ? -1 : shared(b, node, s, e);
    } else if (kind == Empty) {
        rc = add(b, s, EPSILON, 0, e);
    } else if (kind == Bytes) {
        rc = chain(b, node, s, e);
    } else if (kind == ByteSet) {
        rc = byte_set(b, node, s, e);
    } else if (kind == Seq || kind == Alt) {
        rc = items(b, node, s, e, kind == Seq);
    } else if (kind == Repeat) {
        rc = repeat(b, node, s, e);
    } else if (kind == And || kind == Not) {
        rc = nfab_embed(b, node, s, e);
    } else if (kind == RuleRef) {
        PyObject *name = PyObject_GetAttr(node, s_name);
        if (name) PyErr_Format(GrammarError, "unresolved rule reference %R (compile a Grammar, not a bare node)", name);
        Py_XDECREF(name);
        rc = -1;
    } else {
        PyErr_Format(GrammarError, "unknown IR node %s", kind->tp_name);
        rc = -1;
    }
    leave();
    return rc;
}

PyDoc_STRVAR(build_doc,
"build(node, budget, dfa_of, template_of, whole, lexemes, shared, item[, known]) -> (moves, regions, total, empty, cuts)\n\n"
"The NFA of IR `node` from state 0 to state 1.  `dfa_of(node)`: the DFA of an And / Not node;\n"
"`template_of(node)`: the template NFA of a lexeme (a Repeat in the dict `lexemes`, whose value\n"
"says it is open-ended; its `counted` (an item NFA or None) and `moves` are read), spliced in as a\n"
"region; None: a standalone NFA, whose DFAs are embedded whole from `whole(dfa)` = (byte ranges\n"
"per state, accepting flags as bytes).  `shared`: the dict whose keys are the marked Repeat{1,1}\n"
"nodes built once per end state (`shared_nodes`).  `budget`: a CompileBudget.  `item`: None, or the NFA of\n"
"`node`'s item (`node` a bounded Repeat), which `node` then counts over as one region.  `known`:\n"
"None, or what `dfa_of` and `template_of` would return, taken without calling them: (a tuple of\n"
"dicts node -> DFA, looked in in order, for an And / Not node but an And over a repetition bounded\n"
"at count_from or more; count_from; a dict lexeme -> template).  Returns\n"
"the moves of the builder's own states in the flat layout of `_nfa_flat.h` (bytes), the regions\n"
"as (first, last, end, start, start moves or None, dfa, template or item NFA, node, open-ended,\n"
"counted), numbered after the own states, the number of states in all (own and regions'),\n"
"whether the language is empty, and the edges' cuts: 257 bytes, 1 at 0, 256 and every lo and\n"
"hi + 1 of an edge (what `_subset.edge_cuts` computes from the edges).");

/* `build`'s `known`: (a tuple of dicts, count_from, a dict), borrowed into the builder. */
static int parse_known(Builder *b, PyObject *known) {
    if (!PyTuple_Check(known) || !PyArg_ParseTuple(known, "O!LO!", &PyTuple_Type, &b->known_dfas, &b->count_from,
                                                   &PyDict_Type, &b->known_templates)) {
        PyErr_SetString(PyExc_TypeError, "build: known is (a tuple of dicts, count_from, a dict) or None");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(b->known_dfas); i++)
        if (!PyDict_Check(PyTuple_GET_ITEM(b->known_dfas, i))) {
            PyErr_SetString(PyExc_TypeError, "build: known's first item is not a tuple of dicts");
            return -1;
        }
    return 0;
}

static PyObject *py_build(PyObject *Py_UNUSED(module), PyObject *args) {
    Builder b = {0};
    PyObject *node, *item, *known = Py_None, *moves = NULL, *regions = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOO!O!O|O", &node, &b.budget, &b.dfa_of, &b.template_of, &b.whole,
                          &PyDict_Type, &b.lexemes, &PyDict_Type, &b.shared, &item, &known) ||
        (known != Py_None && parse_known(&b, known)))
        return NULL;
    int empty = -1;
    b.cuts[0] = b.cuts[256] = 1;
    if (nfab_load_kinds() || !(b.regions = PyList_New(0)) || !(b.joins = PyDict_New()) || new_state(&b) < 0 ||
        new_state(&b) < 0)
        goto done;
    if (item != Py_None && Py_TYPE(node) != Repeat) {
        PyErr_SetString(PyExc_ValueError, "NFA construction: only a repetition counts over an item");
        goto done;
    }
    empty = is_empty(&b, node);
    if (empty < 0 ||
        (!empty && (item != Py_None ? nfab_counted(&b, node, item, 0, 1, 0) : nfab_build(&b, node, 0, 1))))
        goto done;
    if (!(moves = nfab_moves_flat(&b)) || !(regions = nfab_regions_out(&b))) goto done;
    out = Py_BuildValue("(OOnOy#)", moves, regions, b.n + b.nv, empty ? Py_True : Py_False,
                        (const char *)b.cuts, (Py_ssize_t)sizeof(b.cuts));
done:
    Py_XDECREF(moves);
    Py_XDECREF(regions);
    Py_XDECREF(b.regions);
    Py_XDECREF(b.joins);
    free(b.states);
    free(b.moves);
    free(b.saved);
    return out;
}

static PyMethodDef module_methods[] = {
    {"build", py_build, METH_VARARGS, build_doc},
    {"seq_of", nfab_seq_of, METH_O, nfab_seq_of_doc},
    {"alt_of", nfab_alt_of, METH_O, nfab_alt_of_doc},
    {"share_in", (PyCFunction)(void (*)(void))nfab_share_in, METH_FASTCALL, nfab_share_in_doc},
    {"member_cells", (PyCFunction)(void (*)(void))nfab_member_cells, METH_FASTCALL, nfab_member_cells_doc},
    {"install_hash", nfab_install_hash, METH_VARARGS, nfab_install_hash_doc},
    {"install_eq", nfab_install_eq, METH_O, nfab_install_eq_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_nfa_build", "NFA construction in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__nfa_build(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_empty, "_empty"}, {&s_items, "items"}, {&s_value, "value"}, {&s_ranges, "ranges"},
        {&s_item, "item"}, {&s_min, "min"}, {&s_max, "max"}, {&s_name, "name"}, {&s_num_states, "num_states"},
        {&s_is_empty, "is_empty"}, {&s_moves, "moves"}, {&s_counted, "counted"},
        {&s_check_nfa, "check_nfa"}, {&s_check_time, "check_time"}, {&s_what, "NFA construction"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text))) return NULL;
    return PyModule_Create(&module);
}

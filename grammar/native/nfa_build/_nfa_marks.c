/* `shared_nodes.share`'s table work in C (`share_in`): find a node's mark, or make the mark (a
 * Repeat{1,1} with its hash cached) and record it.  A lowering shares every cell of an object's
 * member list: in Python the lookup, the mark's five slots and its hash cost a few frames a cell.
 */
#include "_nfa_build.h"

static PyObject *s_move_to_end;

/* The hash `ir._cached_hash` gives Repeat(node, 1, 1): hash((node, 1, 1)) ^ hash("Repeat"), the
 * node's hash `h` standing for its lane; -1 never (an int's hash, 1, is 1). */
static Py_hash_t mark_hash(Py_hash_t h) {
    const Py_hash_t lanes[3] = {h, 1, 1};
    const Py_hash_t tuple = nfab_lanes_hash(lanes, 3);
    return tuple ^ nfab_salt_repeat;
}

/* A new Repeat(node, 1, 1) with its slots filled directly, as `ir._maker` fills them (the mark's
 * language is the node's: bounds known valid), its hash `hash` cached; NULL with an exception. */
static PyObject *new_mark(PyObject *node, Py_hash_t hash) {
    PyObject *mark = Repeat->tp_alloc(Repeat, 0);
    if (!mark) return NULL;
    PyObject *one = PyLong_FromLong(1), *cached = PyLong_FromSsize_t(hash);
    const int fields[5] = {F_ITEM, F_MIN, F_MAX, F_HASH, F_EMPTY};
    PyObject *values[5] = {node, one, one, cached, Py_None};
    for (int i = 0; one && cached && i < 5; i++) {
        const Py_ssize_t at = offset_of(mark, fields[i]);
        if (at < 0) {
            PyErr_SetString(PyExc_TypeError, "share_in: ir.Repeat's fields are not plain slots");
            break;
        }
        *(PyObject **)((char *)mark + at) = Py_NewRef(values[i]);
        if (i == 4) {
            Py_DECREF(one);
            Py_DECREF(cached);
            return mark;
        }
    }
    Py_XDECREF(one);
    Py_XDECREF(cached);
    Py_DECREF(mark);
    return NULL;
}

const char nfab_share_in_doc[] = PyDoc_STR(
"share_in(node, mark_of, shared) -> the mark of `node`\n\n"
"`mark_of` (an OrderedDict: node -> its mark, oldest use first) and `shared` (a dict: mark ->\n"
"itself) are `shared_nodes`' tables, held under its lock by the caller.  A node marked before: its\n"
"mark, moved to the end of `mark_of` (by the stored key, found by identity).  Else a new\n"
"Repeat(node, 1, 1), its hash cached, added to both tables (the caller evicts past its bound).");

PyObject *nfab_share_in(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nfab_load_kinds()) return NULL;
    if (nargs != 3 || !PyODict_CheckExact(args[1]) || !PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "share_in(node, mark_of: OrderedDict, shared: dict)");
        return NULL;
    }
    PyObject *node = args[0], *mark_of = args[1], *shared = args[2];
    if (!s_move_to_end && !(s_move_to_end = PyUnicode_InternFromString("move_to_end"))) return NULL;
    const Py_hash_t h = node_hash(node);
    if (h == -1) return NULL;
    PyObject *got = _PyDict_GetItem_KnownHash(mark_of, node, h); /* borrowed */
    if (got) {
        const Py_ssize_t at = Py_TYPE(got) == Repeat ? offset_of(got, F_ITEM) : -1;
        PyObject *key = at >= 0 ? *(PyObject **)((char *)got + at) : NULL;
        if (!key) {
            PyErr_SetString(PyExc_TypeError, "share_in: a mark is not a Repeat");
            return NULL;
        }
        Py_INCREF(got);
        Py_INCREF(key);
        PyObject *done = PyObject_CallMethodOneArg(mark_of, s_move_to_end, key);
        Py_DECREF(key);
        if (!done) {
            Py_DECREF(got);
            return NULL;
        }
        Py_DECREF(done);
        return got;
    }
    if (PyErr_Occurred()) return NULL;
    const Py_hash_t hm = mark_hash(h);
    PyObject *mark = new_mark(node, hm);
    if (!mark) return NULL;
    if (PyODict_SetItem(mark_of, node, mark) < 0 || _PyDict_SetItem_KnownHash(shared, mark, mark, hm) < 0) {
        Py_DECREF(mark);
        return NULL;
    }
    return mark;
}

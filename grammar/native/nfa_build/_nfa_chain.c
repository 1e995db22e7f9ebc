/* An object's member list in C (`member_cells`): the loop of `objects._MemberChain.rest`, each
 * cell (declared index, count so far, first) made with the C cores of ir.seq / ir.alt (`seq_of`,
 * `alt_of`; their Python paths `ir._seq` / `ir._alt` where those say "not my case") and marked with
 * `share_in`, no Python frame a cell.  Only the end cells (one per count) call back to Python.
 */
#include "_nfa_build.h"

static PyObject *s_acquire, *s_release, *s_move_to_end, *py_seq, *py_alt; /* ir._seq, ir._alt */

/* A cell of the member list, as `rest` keys it: (k, count, first). */
typedef struct { Py_ssize_t k, count; int first; } Cell;

#define GROW_STACK(stack, room, need) grow((void **)&(stack), &(room), (need), sizeof(Cell))

typedef struct {
    PyObject *marks, *mark_of, *shared, *lock, *evict;
    Py_ssize_t max_marks;
    int held; /* whether this call holds `lock` */
} Tables;

static int load_names(void) {
    if (py_alt) return 0;
    PyObject *ir = PyImport_ImportModule("formwork.grammar.ir");
    if (!ir) return -1;
    if (!(s_acquire = PyUnicode_InternFromString("acquire")) || !(s_release = PyUnicode_InternFromString("release")) ||
        !(s_move_to_end = PyUnicode_InternFromString("move_to_end")) ||
        !(py_seq = PyObject_GetAttrString(ir, "_seq")) || !(py_alt = PyObject_GetAttrString(ir, "_alt"))) {
        Py_CLEAR(py_seq);
        Py_DECREF(ir);
        return -1;
    }
    Py_DECREF(ir);
    return 0;
}

/* The memo's key of `c` (a new tuple), as `rest` makes it. */
static PyObject *cell_key(Cell c) {
    PyObject *k = PyLong_FromSsize_t(c.k), *count = k ? PyLong_FromSsize_t(c.count) : NULL;
    PyObject *key = count ? PyTuple_Pack(3, k, count, c.first ? Py_True : Py_False) : NULL;
    Py_XDECREF(k);
    Py_XDECREF(count);
    return key;
}

/* `rest`'s memo (a dict keyed by (k, count, first) tuples) with an index of its cells by value in
 * C, so that finding a cell makes no tuple: each cell is looked up about six times, set once.
 * Cells in the dict before the loop are found there (`consult`) and then indexed. */
typedef struct { Cell cell; PyObject *node; } Slot; /* node borrowed from `dict`; NULL: free */
typedef struct { PyObject *dict; Slot *slots; Py_ssize_t cap, n; int consult; } Memo;

static size_t cell_hash(Cell c) {
    return ((size_t)c.k * 0x9E3779B97F4A7C15ULL ^ (size_t)c.count * 0xC2B2AE3D27D4EB4FULL) * 2 + (size_t)c.first;
}

static Slot *slot_of_cell(const Memo *m, Cell c) {
    size_t i = cell_hash(c) & (size_t)(m->cap - 1);
    for (;; i = (i + 1) & (size_t)(m->cap - 1)) {
        Slot *s = &m->slots[i];
        if (!s->node || (s->cell.k == c.k && s->cell.count == c.count && s->cell.first == c.first)) return s;
    }
}

static int index_cell(Memo *m, Cell c, PyObject *node) {
    if (2 * (m->n + 1) > m->cap) { /* at most half full */
        const Py_ssize_t cap = m->cap ? 2 * m->cap : 64;
        Memo bigger = {m->dict, calloc((size_t)cap, sizeof(Slot)), cap, 0, 0};
        if (!bigger.slots) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < m->cap; i++)
            if (m->slots[i].node) *slot_of_cell(&bigger, m->slots[i].cell) = m->slots[i];
        free(m->slots);
        m->slots = bigger.slots;
        m->cap = bigger.cap;
    }
    Slot *s = slot_of_cell(m, c);
    m->n += !s->node;
    *s = (Slot){c, node};
    return 0;
}

/* memo[c] (borrowed), or NULL (absent, or with an exception). */
static PyObject *memo_get(Memo *m, Cell c) {
    PyObject *got = m->cap ? slot_of_cell(m, c)->node : NULL;
    if (got || !m->consult) return got;
    PyObject *key = cell_key(c);
    got = key ? PyDict_GetItemWithError(m->dict, key) : NULL;
    Py_XDECREF(key);
    return got && index_cell(m, c, got) ? NULL : got;
}

static int memo_set(Memo *m, Cell c, PyObject *node) {
    PyObject *key = cell_key(c);
    const int rc = !key || PyDict_SetItem(m->dict, key, node) ? -1 : index_cell(m, c, node);
    Py_XDECREF(key);
    return rc;
}

/* ir.seq(a, b) or ir.alt(a, b): the C core, else the Python path; a new reference. */
static PyObject *pair(int is_seq, PyObject *a, PyObject *b) {
    PyObject *items = PyTuple_Pack(2, a, b);
    if (!items) return NULL;
    PyObject *out = is_seq ? nfab_seq_of(NULL, items) : nfab_alt_of(NULL, items);
    if (out == Py_None) {
        Py_DECREF(out);
        out = PyObject_CallOneArg(is_seq ? py_seq : py_alt, items);
    }
    Py_DECREF(items);
    return out;
}

/* After `share_in` marked `node` (NULL: found again by `take_again`): the oldest marks evicted
 * past `max_marks`, a mark (new or found) appended to `marks`.  Steals `marked`; it, or NULL. */
static PyObject *kept(Tables *t, PyObject *node, PyObject *marked) {
    if (PyDict_GET_SIZE(t->mark_of) > t->max_marks) {
        PyObject *done = PyObject_CallNoArgs(t->evict);
        if (!done) {
            Py_DECREF(marked);
            return NULL;
        }
        Py_DECREF(done);
    }
    if (marked != node && PyList_Append(t->marks, marked)) Py_CLEAR(marked);
    return marked;
}

/* `shared_nodes.share(node)` under the held lock: Empty and Nothing as they are, else the mark
 * (`share_in`), the oldest marks evicted past `max_marks`; a new mark or one found is appended to
 * `marks`.  Steals `node`; a new reference. */
static PyObject *share(Tables *t, PyObject *node) {
    if (!node || Py_TYPE(node) == Empty || Py_TYPE(node) == Nothing) return node;
    PyObject *args[3] = {node, t->mark_of, t->shared};
    PyObject *marked = nfab_share_in(NULL, args, 3);
    Py_DECREF(node);
    return marked ? kept(t, node, marked) : NULL;
}

/* A take made before in this call for the same taken cell (the same member, the same cell after
 * it): its mark, while still the live mark of its node, is what `share` finds for the equal take
 * made again; found here by the mark's own node (no new take, no comparison of the two), moved
 * to the end of `mark_of` and kept as `share` does.  1 with the mark in *out, 0, or -1. */
static int take_again(Tables *t, Memo *takes, Cell taken, PyObject **out) {
    PyObject *mark = takes->cap ? slot_of_cell(takes, taken)->node : NULL;
    const Py_ssize_t at = mark ? offset_of(mark, F_ITEM) : -1;
    PyObject *key = at >= 0 ? *(PyObject **)((char *)mark + at) : NULL;
    const Py_hash_t h = key ? node_hash(key) : 0;
    if (!key || h == -1) return key ? -1 : 0;
    if (_PyDict_GetItem_KnownHash(t->mark_of, key, h) != mark) return PyErr_Occurred() ? -1 : 0;
    PyObject *done = PyObject_CallMethodOneArg(t->mark_of, s_move_to_end, key);
    if (!done) return -1;
    Py_DECREF(done);
    return (*out = kept(t, NULL, Py_NewRef(mark))) ? 1 : -1;
}
/* `objects._holds_container(member)`: some part of the member (an item of a Seq, else itself) is
 * a mark, or an Alt with a mark among its items; 1, 0, or -1 with an exception. */
static int holds_container(PyObject *shared, PyObject *member) {
    const int is_seq = PyObject_TypeCheck(member, Seq);
    PyObject *items = is_seq ? get_field(member, F_ITEMS, s_items) : NULL;
    if (is_seq && !items) return -1;
    PyObject *one[1] = {member}, **parts = one;
    Py_ssize_t n = 1;
    if (items && !(parts = items_of(items, &n, "Seq items", 1))) n = -1;
    int got = n < 0 ? -1 : 0;
    for (Py_ssize_t i = 0; !got && i < n; i++) {
        if ((got = node_in(shared, parts[i])) || !PyObject_TypeCheck(parts[i], Alt)) continue;
        PyObject *alts = get_field(parts[i], F_ITEMS, s_items);
        Py_ssize_t m = 0;
        PyObject **alt = alts ? items_of(alts, &m, "Alt items", 1) : NULL;
        got = alt ? 0 : -1;
        for (Py_ssize_t j = 0; !got && j < m; j++) got = node_in(shared, alt[j]);
        Py_XDECREF(alts);
    }
    Py_XDECREF(items);
    return got;
}

/* The mark of a cell whose taken and skipped cells are known: the member with what follows it
 * (`next`, the taken cell's list; the take itself marked unless `share_takes` is 0 and the member
 * holds no container, its mark kept in `takes`: `take_again`), after a comma unless first, or
 * else the `skipped` cell's list; a new reference. */
static PyObject *inner_cell(Tables *t, Memo *takes, Cell taken, PyObject *member, PyObject *comma,
                            int share_takes, int first, PyObject *next, PyObject *skipped) {
    PyObject *take = NULL;
    int mark = share_takes;
    if (!mark && (mark = holds_container(t->shared, member)) < 0) return NULL;
    const int again = mark ? take_again(t, takes, taken, &take) : 0;
    if (again < 0) return NULL;
    if (!again && (take = pair(1, member, next)) && mark) {
        const int markable = Py_TYPE(take) != Empty && Py_TYPE(take) != Nothing;
        if ((take = share(t, take)) && markable && index_cell(takes, taken, take)) Py_CLEAR(take);
    }
    PyObject *node = take && !first ? pair(1, comma, take) : take;
    if (node != take) Py_XDECREF(take);
    if (node && skipped) {
        PyObject *either = pair(0, node, skipped);
        Py_DECREF(node);
        node = either;
    }
    return share(t, node);
}

/* The end cell (count, first) from Python's `end_cell`, the lock released meanwhile (its marks
 * are shared as `share` does, which takes the lock). */
static PyObject *end_cell(Tables *t, PyObject *call, Cell c) {
    PyObject *done = PyObject_CallMethodNoArgs(t->lock, s_release), *count = NULL, *out = NULL;
    if (!done) return NULL;
    Py_DECREF(done);
    t->held = 0;
    if ((count = PyLong_FromSsize_t(c.count))) {
        PyObject *args[2] = {count, c.first ? Py_True : Py_False};
        out = PyObject_Vectorcall(call, args, 2, NULL);
        Py_DECREF(count);
    }
    PyObject *type, *value, *trace; /* the lock is taken again whatever `call` raised */
    PyErr_Fetch(&type, &value, &trace);
    if ((done = PyObject_CallMethodNoArgs(t->lock, s_acquire))) {
        t->held = 1;
        PyErr_Restore(type, value, trace);
        Py_DECREF(done);
        return out;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    Py_XDECREF(out);
    return NULL;
}

/* A natural number argument as a Py_ssize_t, past its range read as PY_SSIZE_T_MAX if `clamp`
 * (a bound), else refused; -1 with an exception. */
static int size_arg(PyObject *o, int clamp, Py_ssize_t *out) {
    int overflow = 0;
    const long long v = PyLong_Check(o) ? PyLong_AsLongLongAndOverflow(o, &overflow) : -1;
    if (PyErr_Occurred()) return -1;
    if (!PyLong_Check(o) || v < 0 || overflow < 0 || (!clamp && (overflow || v > PY_SSIZE_T_MAX - 1))) {
        PyErr_SetString(PyExc_ValueError, "member_cells: an index, count or bound is not a natural number in range");
        return -1;
    }
    *out = overflow || v > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)v;
    return 0;
}

/* The loop of `_MemberChain.rest` from `root`, the lock held: each cell after the cells it leads
 * to, on an explicit stack, in the order `rest` visits them. */
static PyObject *cells(Tables *t, PyObject *memo_dict, Cell root, PyObject *members, PyObject *comma,
                       Py_ssize_t cap, int share_takes, PyObject *end_call) {
    Py_ssize_t depth = 0, room = 0, end;
    Cell *stack = NULL;
    Memo memo = {memo_dict, NULL, 0, 0, PyDict_GET_SIZE(memo_dict) > 0}, takes = {0}; /* takes: marks in `marks` */
    PyObject *held = PySequence_Tuple(members); /* its items stay put while Python runs */
    PyObject **member = held ? items_of(held, &end, "members", 1) : NULL;
    int rc = member && !GROW_STACK(stack, room, 1) ? 0 : -1;
    if (!rc && root.k > end) { /* as members[k] */
        PyErr_SetString(PyExc_IndexError, "member_cells: the root cell is past the members");
        rc = -1;
    }
    if (!rc) stack[depth++] = root;
    while (!rc && depth) {
        const Cell c = stack[depth - 1];
        PyObject *got = memo_get(&memo, c);
        if (got || PyErr_Occurred()) {
            rc = got ? 0 : -1;
            depth--;
            continue;
        }
        if (c.k == end) {
            PyObject *node = end_cell(t, end_call, c);
            rc = !node || memo_set(&memo, c, node) ? -1 : 0;
            Py_XDECREF(node);
            continue;
        }
        Py_ssize_t n;
        PyObject **pair_items = PyTuple_Check(member[c.k]) ? items_of(member[c.k], &n, "member", 1) : NULL;
        const int required = pair_items && n == 2 ? PyObject_IsTrue(pair_items[1]) : -1;
        if (required < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "member_cells: a member is not (node, required)");
            rc = -1;
            break;
        }
        const Cell taken = {c.k + 1, required ? c.count : c.count + 1 < cap ? c.count + 1 : cap, 0};
        const Cell skipped = {c.k + 1, c.count, c.first};
        PyObject *next = memo_get(&memo, taken), *other = NULL;
        int waiting = !next;
        if (PyErr_Occurred() || GROW_STACK(stack, room, depth + 2)) {
            rc = -1;
            break;
        }
        if (waiting) stack[depth++] = taken;
        if (!required && !(other = memo_get(&memo, skipped))) {
            if (PyErr_Occurred()) {
                rc = -1;
                break;
            }
            stack[depth++] = skipped;
            waiting = 1;
        }
        if (waiting) continue;
        PyObject *node = inner_cell(t, &takes, taken, pair_items[0], comma, share_takes, c.first, next, other);
        rc = !node || memo_set(&memo, c, node) ? -1 : 0;
        Py_XDECREF(node);
    }
    free(stack);
    Py_XDECREF(held);
    PyObject *out = rc ? NULL : memo_get(&memo, root);
    free(memo.slots);
    free(takes.slots);
    if (!out && !PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "member_cells: the root cell was not made");
    return Py_XNewRef(out);
}

const char nfab_member_cells_doc[] = PyDoc_STR(
"member_cells(root, members, memo, marks, comma, cap, share_takes, end_cell, mark_of, shared, lock,\n"
"             evict, max_marks) -> the node of cell `root`\n\n"
"`objects._MemberChain.rest`: the cells (k, count, first) of the member list `members` (a list of\n"
"(member, required)) from `root` on, each in `memo`, every mark made or found appended to `marks`\n"
"in `rest`'s order.  `end_cell(count, first)`: an end cell's node (already shared).  `mark_of`,\n"
"`shared`, `lock`: `shared_nodes`' tables and their lock (not held by the caller; released around\n"
"`end_cell`); `evict()` drops the oldest marks, called when more than `max_marks` are kept.");

PyObject *nfab_member_cells(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nfab_load_kinds() || load_names()) return NULL;
    if (nargs != 13 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 3 || !PyDict_CheckExact(args[2]) ||
        !PyList_CheckExact(args[3]) || !PyODict_CheckExact(args[8]) || !PyDict_CheckExact(args[9])) {
        PyErr_SetString(PyExc_TypeError, "member_cells(root: (k, count, first), members, memo: dict, marks: list, "
                                         "comma, cap, share_takes, end_cell, mark_of: OrderedDict, shared: dict, "
                                         "lock, evict, max_marks)");
        return NULL;
    }
    Tables t = {args[3], args[8], args[9], args[10], args[11], 0, 0};
    Cell root;
    Py_ssize_t cap;
    const int first = PyObject_IsTrue(PyTuple_GET_ITEM(args[0], 2)), share_takes = PyObject_IsTrue(args[6]);
    if (first < 0 || share_takes < 0 || size_arg(PyTuple_GET_ITEM(args[0], 0), 0, &root.k) ||
        size_arg(PyTuple_GET_ITEM(args[0], 1), 0, &root.count) || size_arg(args[5], 1, &cap) ||
        size_arg(args[12], 1, &t.max_marks))
        return NULL;
    root.first = first;
    PyObject *done = PyObject_CallMethodNoArgs(t.lock, s_acquire);
    if (!done) return NULL;
    Py_DECREF(done);
    t.held = 1;
    PyObject *out = cells(&t, args[2], root, args[1], args[4], cap, share_takes, args[7]);
    if (!t.held) return out;
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    done = PyObject_CallMethodNoArgs(t.lock, s_release);
    if (!done) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(trace);
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(done);
    PyErr_Restore(type, value, trace);
    return out;
}

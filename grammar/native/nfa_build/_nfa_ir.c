/* The IR classes, as the C NFA builder (module `formwork.grammar._nfa_build`) reads and makes
 * their nodes: the classes and GrammarError imported on first use, their fields' slot offsets,
 * Repeat bounds, and ir.seq / ir.alt's common cases (`seq_of`, `alt_of`), which make Bytes, Seq
 * and Alt nodes the way ir._maker does.
 */
#include "_nfa_build.h"

PyTypeObject *Empty, *Bytes, *ByteSet, *Seq, *Alt, *Repeat, *And, *Not, *Nothing, *RuleRef;
PyObject *GrammarError;

static const char *const field_names[NUM_FIELDS] = {"_empty", "_hash", "items", "value", "ranges", "item", "min", "max"};
Py_ssize_t nfab_offsets[NUM_KINDS][NUM_FIELDS];
PyTypeObject **nfab_kind_slots[NUM_KINDS] = {&Empty, &Bytes, &ByteSet, &Seq, &Alt, &Repeat, &And, &Not, &Nothing, &RuleRef};

/* The slot offsets of the IR classes' fields (see `nfab_offsets`). */
static int load_offsets(void) {
    for (int i = 0; i < NUM_KINDS; i++)
        for (int f = 0; f < NUM_FIELDS; f++) {
            PyObject *d = PyDict_GetItemString((*nfab_kind_slots[i])->tp_dict, field_names[f]);
            const PyMemberDef *m = d && Py_IS_TYPE(d, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)d)->d_member : NULL;
            nfab_offsets[i][f] = m && m->type == T_OBJECT_EX && !(m->flags & READONLY) ? m->offset : -1;
        }
    return 0;
}

/* `hash(name)` of Bytes, Seq, Alt and Repeat: `ir._cached_hash`'s salt for their nodes' hashes. */
static Py_hash_t salt_bytes, salt_seq, salt_alt;
Py_hash_t nfab_salt_repeat;

static int load_salts(const char *const *names) {
    Py_hash_t *salts[] = {&salt_bytes, &salt_seq, &salt_alt, &nfab_salt_repeat};
    const int at[] = {1, 3, 4, 5}; /* Bytes, Seq, Alt, Repeat in `names` */
    for (int i = 0; i < 4; i++) {
        PyObject *name = PyUnicode_FromString(names[at[i]]);
        *salts[i] = name ? PyObject_Hash(name) : -1;
        Py_XDECREF(name);
        if (*salts[i] == -1) return -1;
    }
    return 0;
}

/* The IR classes and GrammarError, imported on first use (the modules import this one). */
int nfab_load_kinds(void) {
    if (RuleRef) return 0;
    PyObject *ir = PyImport_ImportModule("formwork.grammar.ir");
    PyObject *errors = ir ? PyImport_ImportModule("formwork.grammar.errors") : NULL;
    int rc = -1;
    if (!errors) goto done;
    const char *names[] = {"Empty", "Bytes", "ByteSet", "Seq", "Alt", "Repeat", "And", "Not", "Nothing", "RuleRef"};
    PyTypeObject **kinds[] = {&Empty, &Bytes, &ByteSet, &Seq, &Alt, &Repeat, &And, &Not, &Nothing, &RuleRef};
    PyTypeObject *got[10];
    for (int i = 0; i < 10; i++) {
        PyObject *kind = PyObject_GetAttrString(ir, names[i]);
        if (!kind) goto done;
        got[i] = (PyTypeObject *)kind; /* kept for the process's life */
        if (!PyType_Check(kind)) {
            PyErr_Format(PyExc_TypeError, "NFA construction: ir.%s is not a class", names[i]);
            goto done;
        }
    }
    if (!(GrammarError = PyObject_GetAttrString(errors, "GrammarError"))) goto done;
    for (int i = 0; i < 10; i++) *kinds[i] = got[i];
    rc = load_offsets() || load_salts(names);
done:
    Py_XDECREF(ir);
    Py_XDECREF(errors);
    return rc;
}

/* Repeat bounds: *hi -1 for None (unbounded); past LLONG_MAX reads as LLONG_MAX. */
int nfab_bounds(PyObject *node, long long *lo, long long *hi) {
    PyObject *a = get_field(node, F_MIN, s_min), *z = a ? get_field(node, F_MAX, s_max) : NULL;
    int overflow = 0, rc = -1;
    if (!z) goto done;
    *lo = PyLong_Check(a) ? PyLong_AsLongLongAndOverflow(a, &overflow) : -1;
    *lo = overflow > 0 ? LLONG_MAX : *lo;
    *hi = z == Py_None ? -1 : PyLong_Check(z) ? PyLong_AsLongLongAndOverflow(z, &overflow) : -2;
    *hi = z != Py_None && overflow > 0 ? LLONG_MAX : *hi;
    if (PyErr_Occurred()) goto done;
    if (*lo < 0 || (z != Py_None && *hi < *lo) || overflow < 0) {
        PyErr_SetString(GrammarError, "invalid repetition bounds");
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(a);
    Py_XDECREF(z);
    return rc;
}

/* ------------------------------------------------------------------ ir.seq's common case */

/* The slot `field` of `node` (borrowed; NULL if unset or not a plain slot). */
static PyObject *slot_of(PyObject *node, int field) {
    const Py_ssize_t at = offset_of(node, field);
    return at >= 0 ? *(PyObject **)((char *)node + at) : NULL;
}

/* CPython 3.11's xxHash-based tuple hash of `n` lanes, each an item's hash (none -1). */
Py_hash_t nfab_lanes_hash(const Py_hash_t *lanes, Py_ssize_t n) {
#if SIZEOF_PY_UHASH_T > 4
    const Py_uhash_t p1 = 11400714785074694791ULL, p2 = 14029467366897019727ULL, p5 = 2870177450012600261ULL;
#define ROTATE(x) (((x) << 31) | ((x) >> 33))
#else
    const Py_uhash_t p1 = 2654435761UL, p2 = 2246822519UL, p5 = 374761393UL;
#define ROTATE(x) (((x) << 13) | ((x) >> 19))
#endif
    Py_uhash_t acc = p5;
    for (Py_ssize_t i = 0; i < n; i++) {
        acc += (Py_uhash_t)lanes[i] * p2;
        acc = ROTATE(acc);
        acc *= p1;
    }
#undef ROTATE
    acc += (Py_uhash_t)n ^ (p5 ^ 3527539UL);
    return acc == (Py_uhash_t)-1 ? 1546275796 : (Py_hash_t)acc;
}

/* Python's `hash(items)` of a tuple of nodes (`nfab_lanes_hash`), each item's hash read from its
 * cache where it has one (`node_hash`): `hash(items)` would call each item's `__hash__`, a Python
 * frame apiece.  -1 with an exception if an item's hash fails. */
static Py_hash_t items_hash(PyObject *items) {
    const Py_ssize_t n = PyTuple_GET_SIZE(items);
    Py_hash_t small[16], *lanes = n <= 16 ? small : PyMem_Malloc((size_t)n * sizeof(Py_hash_t));
    if (!lanes) {
        PyErr_NoMemory();
        return -1;
    }
    Py_hash_t out = 0;
    for (Py_ssize_t i = 0; i < n && out != -1; i++)
        if ((lanes[i] = node_hash(PyTuple_GET_ITEM(items, i))) == -1) out = -1;
    if (out != -1) out = nfab_lanes_hash(lanes, n);
    if (lanes != small) PyMem_Free(lanes);
    return out;
}

/* The hash `ir._cached_hash` gives a new node of `kind` holding `value` (its one compared field:
 * hash(value) ^ hash(kind's name)), as a new int; NULL without an exception when it is not known
 * here (the node's `__hash__` then computes it when asked, as before). */
static PyObject *eager_hash(PyTypeObject *kind, PyObject *value) {
    Py_hash_t h = -1, salt = 0;
    if (kind == Bytes && PyBytes_CheckExact(value)) {
        h = PyObject_Hash(value);
        salt = salt_bytes;
    } else if ((kind == Seq || kind == Alt) && PyTuple_CheckExact(value)) {
        h = items_hash(value);
        salt = kind == Seq ? salt_seq : salt_alt;
    }
    if (h == -1) {
        PyErr_Clear(); /* e.g. a RecursionError: left to the Python hash, which walks bottom-up */
        return NULL;
    }
    PyObject *out = PyLong_FromSsize_t(h ^ salt);
    if (!out) PyErr_Clear();
    return out;
}

/* A new node of `kind` (Bytes, Seq or Alt) holding `value` in `field`, its `_empty` cache unset
 * (None) and its hash cached (`eager_hash`, else None), as ir._maker's constructors make them
 * but for the hash: a lowering looks most new nodes up in a dict (marks, memos) at once, and
 * the hash made here costs no Python frame; NULL without an exception when its slots are unknown. */
static PyObject *make_node(PyTypeObject *kind, int field, PyObject *value) {
    PyObject *node = kind->tp_alloc(kind, 0);
    if (!node) return NULL;
    const int fields[3] = {field, F_HASH, F_EMPTY};
    for (int i = 0; i < 3; i++) {
        const Py_ssize_t at = offset_of(node, fields[i]);
        if (at < 0) {
            Py_DECREF(node);
            return NULL;
        }
        PyObject *hash = i == 1 ? eager_hash(kind, value) : NULL;
        *(PyObject **)((char *)node + at) = hash ? hash : Py_NewRef(i ? Py_None : value);
    }
    return node;
}

/* A run of adjacent literals: its only Bytes node (`single`) until a second one joins, then
 * their bytes in `buf`. */
typedef struct { PyObject *single; char *buf; Py_ssize_t len, cap; int open; } Run;

/* Appends the bytes of `value` to the run's buffer. */
static int run_bytes(Run *r, PyObject *value) {
    const Py_ssize_t n = PyBytes_GET_SIZE(value);
    if (!n) return 0;
    if (GROW(r, buf, cap, r->len + n)) return -1;
    memcpy(r->buf + r->len, PyBytes_AS_STRING(value), (size_t)n);
    r->len += n;
    return 0;
}

static int run_add(Run *r, PyObject *node, PyObject *value) {
    if (!r->open) {
        *r = (Run){node, r->buf, 0, r->cap, 1};
        return 0;
    }
    if (r->single) { /* a second literal: copy the first one's bytes */
        PyObject *first = slot_of(r->single, F_VALUE);
        r->single = NULL;
        r->len = 0;
        if (run_bytes(r, first)) return -1;
    }
    return run_bytes(r, value);
}

/* Appends the pending run to `flat` (its only node, or a new Bytes of its bytes); 1 if a node
 * could not be made the way ir._maker makes it, -1 on error. */
static int run_flush(Run *r, PyObject *flat) {
    if (!r->open) return 0;
    r->open = 0;
    if (r->single) return PyList_Append(flat, r->single);
    PyObject *value = PyBytes_FromStringAndSize(r->buf, r->len);
    PyObject *node = value ? make_node(Bytes, F_VALUE, value) : NULL;
    Py_XDECREF(value);
    if (!node) return PyErr_Occurred() ? -1 : 1;
    const int rc = PyList_Append(flat, node);
    Py_DECREF(node);
    return rc;
}

/* The value of a Bytes node, or NULL (not a plain bytes slot). */
static PyObject *literal(PyObject *node) {
    PyObject *value = slot_of(node, F_VALUE);
    return value && PyBytes_CheckExact(value) ? value : NULL;
}

const char nfab_seq_of_doc[] = PyDoc_STR(
"seq_of(items) -> Node | None\n\n"
"ir.seq(*items) when its result is not empty and every Seq among `items` has two or more items:\n"
"concatenation flattened, adjacent literals merged (a run of one keeps its node).  None for\n"
"anything else (a Nothing, an empty result, an unusual node): ir.seq's Python path.");

PyObject *nfab_seq_of(PyObject *Py_UNUSED(module), PyObject *items) {
    if (nfab_load_kinds()) return NULL;
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "seq_of: items must be a tuple");
        return NULL;
    }
    PyObject *flat = PyList_New(0), *out = NULL;
    Run run = {0};
    int rc = flat ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(items); i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i), *value;
        const PyTypeObject *kind = Py_TYPE(item);
        if (kind == Bytes) {
            rc = (value = literal(item)) ? run_add(&run, item, value) : 1;
        } else if (kind == Seq) { /* already normal: only its ends may merge */
            PyObject *parts = slot_of(item, F_ITEMS);
            Py_ssize_t n = parts && PyTuple_CheckExact(parts) ? PyTuple_GET_SIZE(parts) : 0;
            if (n < 2) {
                rc = 1;
                break;
            }
            PyObject *head = PyTuple_GET_ITEM(parts, 0), *tail = PyTuple_GET_ITEM(parts, n - 1);
            Py_ssize_t lo = 0, hi = n;
            if (Py_TYPE(head) == Bytes) {
                if (!(value = literal(head)) || run_add(&run, head, value)) {
                    rc = value ? -1 : 1;
                    break;
                }
                lo = 1;
            }
            if ((rc = run_flush(&run, flat))) break;
            if (Py_TYPE(tail) == Bytes) hi = n - 1;
            for (Py_ssize_t j = lo; !rc && j < hi; j++) rc = PyList_Append(flat, PyTuple_GET_ITEM(parts, j));
            if (!rc && hi < n) rc = (value = literal(tail)) ? run_add(&run, tail, value) : 1;
        } else if (kind == Empty) {
            continue;
        } else if (kind == Nothing) {
            rc = 1;
        } else {
            rc = run_flush(&run, flat) || PyList_Append(flat, item) ? (PyErr_Occurred() ? -1 : 1) : 0;
        }
    }
    if (!rc) rc = run_flush(&run, flat);
    if (!rc && !PyList_GET_SIZE(flat)) rc = 1; /* nothing left: ir.seq's EMPTY */
    if (!rc && PyList_GET_SIZE(flat) == 1) {
        out = Py_NewRef(PyList_GET_ITEM(flat, 0));
    } else if (!rc) {
        PyObject *tuple = PyList_AsTuple(flat);
        out = tuple ? make_node(Seq, F_ITEMS, tuple) : NULL;
        Py_XDECREF(tuple);
        if (!out && !PyErr_Occurred()) out = Py_NewRef(Py_None);
    } else if (rc > 0) {
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(flat);
    free(run.buf);
    return out;
}

/* ------------------------------------------------------------------ ir.alt's common case */

/* `flat[node] = None`, the node's hash read from its cache where it has one (`node_hash`: its
 * `__hash__` is a Python frame). */
static int add_known(PyObject *flat, PyObject *node) {
    const Py_hash_t h = node_hash(node);
    return h == -1 ? -1 : _PyDict_SetItem_KnownHash(flat, node, Py_None, h);
}

const char nfab_alt_of_doc[] = PyDoc_STR(
"alt_of(items) -> Node | None\n\n"
"ir.alt(*items) for two or more items, or one Alt: union flattened (an Alt's items in its place),\n"
"Nothing dropped, equal nodes kept once, first one first.  None for anything else (one plain\n"
"item, an empty union, an Alt whose items are not a tuple): ir.alt's Python path.");

PyObject *nfab_alt_of(PyObject *Py_UNUSED(module), PyObject *items) {
    if (nfab_load_kinds()) return NULL;
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "alt_of: items must be a tuple");
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(items);
    if (n == 1 && Py_TYPE(PyTuple_GET_ITEM(items, 0)) != Alt) return Py_NewRef(Py_None);
    PyObject *flat = PyDict_New(), *out = NULL;
    int rc = flat ? 0 : -1;
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (Py_TYPE(item) == Nothing) continue;
        if (Py_TYPE(item) != Alt) {
            rc = add_known(flat, item);
            continue;
        }
        PyObject *parts = slot_of(item, F_ITEMS);
        if (!parts || !PyTuple_CheckExact(parts)) {
            rc = 1;
            break;
        }
        for (Py_ssize_t j = 0; !rc && j < PyTuple_GET_SIZE(parts); j++) {
            PyObject *part = PyTuple_GET_ITEM(parts, j);
            if (Py_TYPE(part) != Nothing) rc = add_known(flat, part);
        }
    }
    if (!rc && !PyDict_GET_SIZE(flat)) rc = 1; /* nothing left: ir.alt's NOTHING */
    if (!rc) {
        PyObject *keys = PyDict_Keys(flat), *tuple = keys ? PyList_AsTuple(keys) : NULL;
        if (tuple && PyTuple_GET_SIZE(tuple) == 1) out = Py_NewRef(PyTuple_GET_ITEM(tuple, 0));
        else if (tuple && !(out = make_node(Alt, F_ITEMS, tuple)) && !PyErr_Occurred()) out = Py_NewRef(Py_None);
        Py_XDECREF(keys);
        Py_XDECREF(tuple);
    } else if (rc > 0) {
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(flat);
    return out;
}

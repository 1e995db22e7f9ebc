/* IR nodes hashed without a Python frame: `install_hash(cls, fields, salt)` gives an IR node class
 * a C `tp_hash` that returns the hash cached in the node's `_hash` slot.  A node not hashed yet
 * gets the hash its Python `__hash__` would make, hash(its compared fields) ^ salt, computed and
 * cached here (its sub-nodes' first, bottom-up) when its fields are nodes or plain values (ints,
 * None, bytes, str, and tuples of them); else (an odd field) its Python `__hash__` computes it.
 *
 * Why the type slot, and not a C base class: the class keeps its layout, bases, `object.__new__`
 * and pickling as they are, and its `__hash__` attribute stays the Python function (what
 * `cls.__hash__(node)` calls, and what computes a hash this file does not make).  CPython only
 * resyncs a type's `tp_hash` with its `__hash__` attribute when that attribute is assigned (on the
 * class or a base): such an assignment replaces the hash installed here with CPython's own
 * dispatcher to the new `__hash__`, so it works as it always did; subclasses made later dispatch
 * to the Python `__hash__` they inherit.  The same holds on CPython 3.11 and 3.12.
 */
#include "_nfa_build.h"

/* The classes given a C hash (`HashedClass`).  MAX_STACK: the most nodes `walk_hash` keeps to
 * hash (past it, say through a cycle made with object.__setattr__, the Python `__hash__` goes on). */
enum { MAX_HASHED = 64, MAX_FIELDS = NFAB_MAX_FIELDS, MAX_STACK = 1 << 24 };

static HashedClass hashed[MAX_HASHED];
static int n_hashed;
static PyObject *s_hash_name, *s_slot_name; /* "__hash__", "_hash" */

/* What `hash()` makes of a `__hash__` result (as CPython's slot_tp_hash): -1 as -2, an int past
 * Py_ssize_t by its own hash; -1 with an exception if it is no int. */
static Py_hash_t as_hash(PyObject *value) {
    if (!PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "__hash__ method should return an integer");
        return -1;
    }
    Py_hash_t h = PyLong_AsSsize_t(value);
    if (h == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        h = PyLong_Type.tp_hash(value);
    }
    return h == -1 ? -2 : h;
}

/* The hash computed by the class's Python `__hash__` (found on the type, as `hash()` would). */
static Py_hash_t python_hash(PyObject *node) {
    PyObject *method = _PyType_Lookup(Py_TYPE(node), s_hash_name); /* borrowed */
    if (!method || method == Py_None) return PyObject_HashNotImplemented(node);
    Py_INCREF(method);
    PyObject *value = PyObject_CallOneArg(method, node);
    Py_DECREF(method);
    if (!value) return -1;
    const Py_hash_t h = as_hash(value);
    Py_DECREF(value);
    return h;
}

/* The installed class of `kind`, or NULL. */
static const HashedClass *entry_of(const PyTypeObject *kind) {
    for (int i = 0; i < n_hashed; i++)
        if (hashed[i].kind == kind) return &hashed[i];
    return NULL;
}

const HashedClass *nfab_hashed_class(const PyTypeObject *kind) {
    return entry_of(kind);
}

/* The hash of a field's value as `hash()` gives it, or -1 (no exception) where it is not read
 * here: a node without a cached hash, a value that is no plain one, or a tuple nested deeper than
 * `depth`.  Never runs Python code. */
static Py_hash_t value_hash(PyObject *value, int depth) {
    const HashedClass *sub = entry_of(Py_TYPE(value));
    if (sub) {
        PyObject *cached = *(PyObject **)((char *)value + sub->at);
        return cached && PyLong_CheckExact(cached) ? as_hash(cached) : -1;
    }
    if (PyTuple_CheckExact(value) && depth > 0) {
        const Py_ssize_t n = PyTuple_GET_SIZE(value);
        Py_hash_t small[16], *lanes = n <= 16 ? small : PyMem_Malloc((size_t)n * sizeof(Py_hash_t));
        if (!lanes) return -1;
        Py_hash_t out = 0;
        for (Py_ssize_t i = 0; i < n && out != -1; i++)
            if ((lanes[i] = value_hash(PyTuple_GET_ITEM(value, i), depth - 1)) == -1) out = -1;
        if (out != -1) out = nfab_lanes_hash(lanes, n);
        if (lanes != small) PyMem_Free(lanes);
        return out;
    }
    if (PyLong_CheckExact(value) || PyBool_Check(value) || value == Py_None || PyBytes_CheckExact(value) ||
        PyUnicode_CheckExact(value)) {
        const Py_hash_t h = PyObject_Hash(value);
        if (h == -1) PyErr_Clear();
        return h;
    }
    return -1;
}

/* hash(compared fields) ^ salt of a node of class `e`, cached in its `_hash` slot as the Python
 * `__hash__` caches it; -1 (no exception) where `value_hash` does not read a field. */
static Py_hash_t fields_hash(PyObject *node, const HashedClass *e) {
    Py_hash_t lanes[MAX_FIELDS], h;
    for (int i = 0; i < e->n_fields; i++) {
        PyObject *value = *(PyObject **)((char *)node + e->fields[i]);
        if (!value || (lanes[i] = value_hash(value, 2)) == -1) return -1;
    }
    if (e->n_fields == 1) h = lanes[0] ^ e->salt; /* the field itself, not a tuple of it */
    else if (e->n_fields >= 0) h = nfab_lanes_hash(lanes, e->n_fields) ^ e->salt;
    else return -1;
    PyObject *cached = PyLong_FromSsize_t(h), **slot = (PyObject **)((char *)node + e->at);
    if (!cached) {
        PyErr_Clear();
        return -1;
    }
    Py_XSETREF(*slot, cached);
    return h == -1 ? -2 : h;
}

/* The nodes not hashed yet among `value` (a field: a node, or a tuple of them), pushed on `stack`
 * (borrowed: their parents hold them); -1 past MAX_STACK or out of memory. */
typedef struct { PyObject **nodes; Py_ssize_t n, cap; } Stack;

static int push_unhashed(Stack *stack, PyObject *value) {
    PyObject **items = &value;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(value)) {
        items = ((PyTupleObject *)value)->ob_item;
        n = PyTuple_GET_SIZE(value);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const HashedClass *sub = entry_of(Py_TYPE(items[i]));
        if (!sub || *(PyObject **)((char *)items[i] + sub->at) != Py_None) continue;
        if (stack->n == MAX_STACK || GROW(stack, nodes, cap, stack->n + 1)) {
            PyErr_Clear();
            return -1;
        }
        stack->nodes[stack->n++] = items[i];
    }
    return 0;
}

/* The first hash of `root`, whose fields hold nodes not hashed yet: theirs made first, bottom-up
 * with an explicit stack (no recursion: lowered IR nests thousands deep), each cached; -1 (no
 * exception) where a node's fields are not read here (`value_hash`): the nodes made so far keep
 * their hashes, the rest is left to the Python `__hash__`. */
static Py_hash_t walk_hash(PyObject *root) {
    Stack stack = {0};
    Py_hash_t h = -1;
    if (push_unhashed(&stack, root)) return -1;
    while (stack.n) {
        PyObject *top = stack.nodes[stack.n - 1];
        const HashedClass *e = entry_of(Py_TYPE(top));
        if (*(PyObject **)((char *)top + e->at) != Py_None) { /* reached by another path first */
            stack.n--;
            continue;
        }
        const Py_ssize_t below = stack.n;
        for (int i = 0; i < e->n_fields; i++) {
            PyObject *value = *(PyObject **)((char *)top + e->fields[i]);
            if (value && push_unhashed(&stack, value)) goto done;
        }
        if (stack.n > below) continue;
        stack.n--;
        if ((h = fields_hash(top, e)) == -1) goto done;
    }
done:
    free(stack.nodes);
    return h;
}

/* The C `tp_hash` of an installed class: the cached int read from the `_hash` slot, else made
 * here (`fields_hash`, `walk_hash`) or by the class's Python `__hash__`. */
static Py_hash_t cached_hash(PyObject *node) {
    const HashedClass *e = entry_of(Py_TYPE(node));
    if (!e) return python_hash(node);
    PyObject *cached = *(PyObject **)((char *)node + e->at);
    if (cached && PyLong_CheckExact(cached)) return as_hash(cached);
    Py_hash_t h = -1;
    if (cached == Py_None && (h = fields_hash(node, e)) == -1) h = walk_hash(node);
    return h != -1 ? h : python_hash(node);
}

const char nfab_install_hash_doc[] = PyDoc_STR(
"install_hash(cls, fields, salt) -> bool\n\n"
"Give the IR node class `cls` (a class with a plain `_hash` slot and a `__hash__` that caches\n"
"there hash(its compared `fields`' values, the value itself if one, else their tuple) ^ `salt`) a C\n"
"hash that reads the slot, or computes that hash while its sub-nodes' hashes are cached, calling\n"
"`cls.__hash__` for the rest: the same hashes, without a Python frame.  False (nothing changed)\n"
"for a class that is no heap type, has no such slot or `__hash__`, or once the table of installed\n"
"classes is full.");

/* The slot of field `name` of `kind`, or -1 (not a plain slot). */
static Py_ssize_t slot_at(PyTypeObject *kind, PyObject *name) {
    PyObject *d = PyUnicode_Check(name) ? PyDict_GetItemWithError(kind->tp_dict, name) : NULL; /* borrowed */
    const PyMemberDef *m = d && Py_IS_TYPE(d, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)d)->d_member : NULL;
    return m && m->type == T_OBJECT_EX && !(m->flags & READONLY) ? m->offset : -1;
}

PyObject *nfab_install_hash(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cls, *fields;
    Py_hash_t salt;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyType_Type, &cls, &PyTuple_Type, &fields, &salt)) return NULL;
    if ((!s_hash_name && !(s_hash_name = PyUnicode_InternFromString("__hash__"))) ||
        (!s_slot_name && !(s_slot_name = PyUnicode_InternFromString("_hash"))))
        return NULL;
    PyTypeObject *kind = (PyTypeObject *)cls;
    if (entry_of(kind)) Py_RETURN_TRUE;
    /* a heap type's tp_dict is its own dict (a static builtin's is NULL from 3.12) */
    if (!(kind->tp_flags & Py_TPFLAGS_HEAPTYPE) || !kind->tp_dict || n_hashed == MAX_HASHED) Py_RETURN_FALSE;
    HashedClass e = {kind, slot_at(kind, s_slot_name), salt, (int)PyTuple_GET_SIZE(fields), {0}};
    if (PyErr_Occurred()) return NULL;
    PyObject *method = PyDict_GetItemWithError(kind->tp_dict, s_hash_name); /* borrowed */
    if (PyErr_Occurred()) return NULL;
    if (e.at < 0 || !method || !PyFunction_Check(method)) Py_RETURN_FALSE;
    if (e.n_fields > MAX_FIELDS) e.n_fields = -1;
    for (int i = 0; i < e.n_fields; i++)
        if ((e.fields[i] = slot_at(kind, PyTuple_GET_ITEM(fields, i))) < 0) e.n_fields = -1;
    if (PyErr_Occurred()) return NULL;
    hashed[n_hashed++] = e;
    Py_INCREF(cls); /* kept for the process's life, as its entry */
    kind->tp_hash = cached_hash;
    PyType_Modified(kind);
    Py_RETURN_TRUE;
}

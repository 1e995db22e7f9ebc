/* The certainly-valid meta-schema predicate of `schemas/meta_predicate.py`, run in C.
 *
 * `meta_predicate._Compiler` compiles a meta-schema into a program: a list of nodes (one per
 * subschema, `$ref`s and recursion as node numbers), each a list of checks (tuples, opcode
 * first).  `Program(nodes, is_type)` reads it once; calling the program with an instance walks
 * the nodes over it and answers True only when every check passes, each with jsonschema's
 * semantics (the draft's type checker `is_type` for types beyond the simple ones, its format
 * checker's `conforms`, the compiled pattern's `search`; those run as Python callbacks).  False
 * is "invalid or not sure", as in the Python form; a nesting too deep for the C stack is "not
 * sure" too, and an exception from a callback propagates. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { OP_NEVER, OP_TYPE, OP_PROPERTIES, OP_ITEMS, OP_PROPERTY_NAMES, OP_ANY_OF, OP_ALL_OF,
       OP_ENUM, OP_MIN_ITEMS, OP_UNIQUE_ITEMS, OP_MINIMUM, OP_DEPENDENCIES, OP_PATTERN, OP_FORMAT,
       OP_COUNT };
/* Type codes of `OP_TYPE`: the simple types by `isinstance`, the numeric ones by the checker. */
enum { T_OBJECT, T_ARRAY, T_STRING, T_BOOLEAN, T_NULL, T_INTEGER, T_NUMBER, T_OTHER };

typedef struct {
    int op;
    int node;             /* OP_ITEMS, OP_PROPERTY_NAMES; OP_PROPERTIES: additionalProperties (-1: none);
                             OP_MINIMUM: 1 for a strict bound */
    Py_ssize_t count;     /* OP_TYPE: type codes; OP_ANY_OF / OP_ALL_OF: nodes */
    int *items;           /* those codes or node numbers */
    Py_ssize_t min_items; /* OP_MIN_ITEMS */
    PyObject *obj;        /* borrowed from the program's source: see `read_check` */
    PyObject *arg;
} Check;

typedef struct {
    Py_ssize_t count;
    Check *checks;
} Node;

typedef struct {
    PyObject_HEAD
    PyObject *source;  /* the nodes as given: owns every object the checks borrow */
    PyObject *is_type; /* the draft's `TYPE_CHECKER.is_type` */
    Py_ssize_t count;
    Node *nodes;
} Program;

static int eval_node(Program *p, int index, PyObject *x);

/* `is_type(x, name)` of the type checker, without the call for the usual exact ints and floats
 * (an exact int is an "integer" and a "number", an exact float a "number", in every draft). */
static int is_type(Program *p, int code, PyObject *name, PyObject *x) {
    switch (code) {
    case T_OBJECT: return PyDict_Check(x);
    case T_ARRAY: return PyList_Check(x);
    case T_STRING: return PyUnicode_Check(x);
    case T_BOOLEAN: return PyBool_Check(x);
    case T_NULL: return x == Py_None;
    case T_INTEGER: if (PyLong_CheckExact(x)) return 1; break;
    case T_NUMBER: if (PyLong_CheckExact(x) || PyFloat_CheckExact(x)) return 1; break;
    }
    PyObject *said = PyObject_CallFunctionObjArgs(p->is_type, x, name, NULL);
    if (said == NULL) return -1;
    int truth = PyObject_IsTrue(said);
    Py_DECREF(said);
    return truth;
}

static int check_type(Program *p, const Check *c, PyObject *x) {
    for (Py_ssize_t i = 0; i < c->count; i++) {
        int got = is_type(p, c->items[i], PyTuple_GET_ITEM(c->obj, i), x);
        if (got != 0) return got;
    }
    return 0;
}

/* Every member value passes its property's node (or additionalProperties'). */
static int check_properties(Program *p, const Check *c, PyObject *x) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(x, &pos, &key, &value)) {
        PyObject *node = PyDict_GetItemWithError(c->obj, key);
        if (node == NULL && PyErr_Occurred()) return -1;
        int index = node != NULL ? (int)PyLong_AsLong(node) : c->node;
        if (index < 0) continue;
        Py_INCREF(key);
        Py_INCREF(value);
        int got = eval_node(p, index, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (got <= 0) return got;
    }
    return 1;
}

static int check_items(Program *p, const Check *c, PyObject *x) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(x); i++) {
        PyObject *item = PyList_GET_ITEM(x, i);
        Py_INCREF(item);
        int got = eval_node(p, c->node, item);
        Py_DECREF(item);
        if (got <= 0) return got;
    }
    return 1;
}

static int check_property_names(Program *p, const Check *c, PyObject *x) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(x, &pos, &key, &value)) {
        Py_INCREF(key);
        int got = eval_node(p, c->node, key);
        Py_DECREF(key);
        if (got <= 0) return got;
    }
    return 1;
}

/* Scalar items only (str, int, float, None: Python's == then equates every pair JSON Schema
 * does), all distinct; containers are left to jsonschema. */
static int check_unique_items(PyObject *x) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(x); i++) {
        PyObject *item = PyList_GET_ITEM(x, i);
        if (!PyUnicode_Check(item) && !PyLong_Check(item) && !PyFloat_Check(item) && item != Py_None)
            return 0;
    }
    PyObject *set = PySet_New(x);
    if (set == NULL) return -1;
    int distinct = PySet_GET_SIZE(set) == PyList_GET_SIZE(x);
    Py_DECREF(set);
    return distinct;
}

/* draft-04/06/07 `dependencies`: `obj` holds (key, names or None, node) triples. */
static int check_dependencies(Program *p, const Check *c, PyObject *x) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c->obj); i++) {
        PyObject *entry = PyTuple_GET_ITEM(c->obj, i);
        int present = PyDict_Contains(x, PyTuple_GET_ITEM(entry, 0));
        if (present <= 0) {
            if (present < 0) return -1;
            continue;
        }
        PyObject *names = PyTuple_GET_ITEM(entry, 1);
        if (names == Py_None) {
            int got = eval_node(p, (int)PyLong_AsLong(PyTuple_GET_ITEM(entry, 2)), x);
            if (got <= 0) return got;
            continue;
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names); j++) {
            int has = PyDict_Contains(x, PyTuple_GET_ITEM(names, j));
            if (has <= 0) return has;
        }
    }
    return 1;
}

/* `obj(x, ...)`'s truth (or, with `none_is_false`, whether it is not None). */
static int call_truth(PyObject *fn, PyObject *x, PyObject *arg, int none_is_false) {
    PyObject *said = PyObject_CallFunctionObjArgs(fn, x, arg, NULL);
    if (said == NULL) return -1;
    int truth = none_is_false ? said != Py_None : PyObject_IsTrue(said);
    Py_DECREF(said);
    return truth;
}

static int eval_check(Program *p, const Check *c, PyObject *x) {
    switch (c->op) {
    case OP_NEVER: return 0;
    case OP_TYPE: return check_type(p, c, x);
    case OP_PROPERTIES: return PyDict_Check(x) ? check_properties(p, c, x) : 1;
    case OP_ITEMS: return PyList_Check(x) ? check_items(p, c, x) : 1;
    case OP_PROPERTY_NAMES: return PyDict_Check(x) ? check_property_names(p, c, x) : 1;
    case OP_ANY_OF:
        for (Py_ssize_t i = 0; i < c->count; i++) {
            int got = eval_node(p, c->items[i], x);
            if (got != 0) return got;
        }
        return 0;
    case OP_ALL_OF:
        for (Py_ssize_t i = 0; i < c->count; i++) {
            int got = eval_node(p, c->items[i], x);
            if (got <= 0) return got;
        }
        return 1;
    case OP_ENUM: return PyUnicode_Check(x) ? PySet_Contains(c->obj, x) : 0;
    case OP_MIN_ITEMS: return !PyList_Check(x) || PyList_GET_SIZE(x) >= c->min_items;
    case OP_UNIQUE_ITEMS: return PyList_Check(x) ? check_unique_items(x) : 1;
    case OP_MINIMUM: {
        int number = is_type(p, T_NUMBER, c->arg, x);
        if (number <= 0) return number < 0 ? -1 : 1;
        return PyObject_RichCompareBool(x, c->obj, c->node ? Py_GT : Py_GE);
    }
    case OP_DEPENDENCIES: return PyDict_Check(x) ? check_dependencies(p, c, x) : 1;
    case OP_PATTERN: return PyUnicode_Check(x) ? call_truth(c->obj, x, NULL, 1) : 1;
    case OP_FORMAT: return call_truth(c->obj, x, c->arg, 0);
    }
    return 0;
}

static int eval_node(Program *p, int index, PyObject *x) {
    const Node *node = &p->nodes[index];
    if (node->count == 0) return 1;
    if (Py_EnterRecursiveCall(" checking a schema against its meta-schema")) return -1;
    int got = 1;
    for (Py_ssize_t i = 0; i < node->count && got > 0; i++) got = eval_check(p, &node->checks[i], x);
    Py_LeaveRecursiveCall();
    return got;
}

/* ---- reading the program */

static int bad(const char *what) {
    PyErr_Format(PyExc_ValueError, "meta-schema program: %s", what);
    return -1;
}

/* A node number below `count`; -1 for None where `none_ok` (no additionalProperties); else
 * -2 with an exception set. */
static int node_number(PyObject *value, Py_ssize_t count, int none_ok) {
    if (value == Py_None && none_ok) return -1;
    long index = PyLong_Check(value) ? PyLong_AsLong(value) : -1;
    if (index < 0 || index >= count) {
        if (!PyErr_Occurred()) bad("a node number out of range");
        return -2;
    }
    return (int)index;
}

/* The ints of tuple `numbers` into `c->items`: node numbers, or type codes when `codes`. */
static int read_numbers(Check *c, PyObject *numbers, Py_ssize_t count, int codes) {
    if (!PyTuple_Check(numbers)) return bad("a tuple of numbers expected");
    c->count = PyTuple_GET_SIZE(numbers);
    c->items = PyMem_Calloc(c->count + 1, sizeof(int));
    if (c->items == NULL) return PyErr_NoMemory(), -1;
    for (Py_ssize_t i = 0; i < c->count; i++) {
        PyObject *n = PyTuple_GET_ITEM(numbers, i);
        int value = codes ? (int)PyLong_AsLong(n) : node_number(n, count, 0);
        if (codes && (value < 0 || value > T_OTHER)) return PyErr_Occurred() ? -1 : bad("a type code");
        if (value < 0) return -1;
        c->items[i] = value;
    }
    return 0;
}

static int read_properties(Check *c, Py_ssize_t count) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(c->obj)) return bad("properties: a dict expected");
    while (PyDict_Next(c->obj, &pos, &key, &value))
        if (node_number(value, count, 0) < 0) return -1;
    return 0;
}

static int read_dependencies(Check *c, Py_ssize_t count) {
    if (!PyTuple_Check(c->obj)) return bad("dependencies: a tuple expected");
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c->obj); i++) {
        PyObject *e = PyTuple_GET_ITEM(c->obj, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3) return bad("dependencies: triples expected");
        PyObject *names = PyTuple_GET_ITEM(e, 1);
        if (names == Py_None ? node_number(PyTuple_GET_ITEM(e, 2), count, 0) < 0 : !PyTuple_Check(names))
            return PyErr_Occurred() ? -1 : bad("dependencies: names or a node");
    }
    return 0;
}

/* One check tuple; its objects stay borrowed from the source the program keeps. */
static int read_check(Check *c, PyObject *t, Py_ssize_t count) {
    Py_ssize_t size = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    if (size < 1) return bad("a check is a non-empty tuple");
    c->op = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
    c->node = -1;
    c->obj = size > 1 ? PyTuple_GET_ITEM(t, 1) : NULL;
    c->arg = size > 2 ? PyTuple_GET_ITEM(t, 2) : NULL;
    static const Py_ssize_t sizes[OP_COUNT] = {1, 3, 3, 2, 2, 2, 2, 2, 2, 1, 4, 2, 2, 3};
    if (c->op < 0 || c->op >= OP_COUNT || size != sizes[c->op])
        return PyErr_Occurred() ? -1 : bad("an opcode");
    switch (c->op) {
    case OP_TYPE:
        if (!PyTuple_Check(c->arg) || PyTuple_GET_SIZE(c->arg) != PyTuple_GET_SIZE(c->obj))
            return bad("type: names expected");
        if (read_numbers(c, c->obj, count, 1) < 0) return -1;
        c->obj = c->arg;  /* the names, one per code */
        return 0;
    case OP_PROPERTIES:
        return (c->node = node_number(c->arg, count, 1)) < -1 ? -1 : read_properties(c, count);
    case OP_ITEMS: case OP_PROPERTY_NAMES: return (c->node = node_number(c->obj, count, 0)) < 0 ? -1 : 0;
    case OP_ANY_OF: case OP_ALL_OF: return read_numbers(c, c->obj, count, 0);
    case OP_ENUM: return PyFrozenSet_Check(c->obj) ? 0 : bad("enum: a frozenset expected");
    case OP_MIN_ITEMS:
        c->min_items = PyLong_AsSsize_t(c->obj);
        return c->min_items == -1 && PyErr_Occurred() ? -1 : 0;
    case OP_MINIMUM:
        c->node = PyObject_IsTrue(PyTuple_GET_ITEM(t, 3));  /* strict */
        return c->node < 0 ? -1 : 0;  /* obj: the bound; arg: the type name "number" */
    case OP_DEPENDENCIES: return read_dependencies(c, count);
    }
    return 0;
}

static void program_dealloc(Program *p) {
    for (Py_ssize_t i = 0; p->nodes != NULL && i < p->count; i++) {
        for (Py_ssize_t j = 0; p->nodes[i].checks != NULL && j < p->nodes[i].count; j++)
            PyMem_Free(p->nodes[i].checks[j].items);
        PyMem_Free(p->nodes[i].checks);
    }
    PyMem_Free(p->nodes);
    Py_XDECREF(p->source);
    Py_XDECREF(p->is_type);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *source, *checker;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
        return PyErr_Format(PyExc_TypeError, "Program() takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "O!O:Program", &PyList_Type, &source, &checker)) return NULL;
    Program *p = (Program *)type->tp_alloc(type, 0);
    if (p == NULL) return NULL;
    p->source = PySequence_Tuple(source);  /* a tuple: the nodes cannot change under the program */
    Py_INCREF(checker);
    p->is_type = checker;
    if (p->source == NULL) goto fail;
    p->count = PyTuple_GET_SIZE(p->source);
    if (p->count == 0) { bad("no nodes"); goto fail; }
    p->nodes = PyMem_Calloc(p->count, sizeof(Node));
    if (p->nodes == NULL) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t i = 0; i < p->count; i++) {
        PyObject *checks = PyTuple_GET_ITEM(p->source, i);
        if (!PyTuple_Check(checks)) { bad("a node is a tuple of checks"); goto fail; }
        Node *node = &p->nodes[i];
        node->checks = PyMem_Calloc(PyTuple_GET_SIZE(checks) + 1, sizeof(Check));
        if (node->checks == NULL) { PyErr_NoMemory(); goto fail; }
        node->count = PyTuple_GET_SIZE(checks);
        for (Py_ssize_t j = 0; j < node->count; j++)
            if (read_check(&node->checks[j], PyTuple_GET_ITEM(checks, j), p->count) < 0) goto fail;
    }
    return (PyObject *)p;
fail:
    Py_DECREF(p);
    return NULL;
}

/* program(instance) -> bool: True only when the meta-schema certainly accepts `instance`. */
static PyObject *program_call(Program *p, PyObject *args, PyObject *kwargs) {
    PyObject *x;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
        return PyErr_Format(PyExc_TypeError, "a Program takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "O:Program", &x)) return NULL;
    int got = eval_node(p, 0, x);
    if (got < 0) {
        if (!PyErr_ExceptionMatches(PyExc_RecursionError)) return NULL;
        PyErr_Clear();  /* too deep for the C stack: not sure, jsonschema decides */
        got = 0;
    }
    return PyBool_FromLong(got);
}

static PyTypeObject program_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "formwork.schemas._meta_check.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_call = (ternaryfunc)program_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Program(nodes, is_type): a compiled meta-schema predicate (node 0 is the root).",
    .tp_new = program_new,
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_meta_check", NULL, -1,
                                        NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__meta_check(void) {
    if (PyType_Ready(&program_type) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    static const struct { const char *name; int value; } constants[] = {
        {"NEVER", OP_NEVER}, {"TYPE", OP_TYPE}, {"PROPERTIES", OP_PROPERTIES}, {"ITEMS", OP_ITEMS},
        {"PROPERTY_NAMES", OP_PROPERTY_NAMES}, {"ANY_OF", OP_ANY_OF}, {"ALL_OF", OP_ALL_OF},
        {"ENUM", OP_ENUM}, {"MIN_ITEMS", OP_MIN_ITEMS}, {"UNIQUE_ITEMS", OP_UNIQUE_ITEMS},
        {"MINIMUM", OP_MINIMUM}, {"DEPENDENCIES", OP_DEPENDENCIES}, {"PATTERN", OP_PATTERN},
        {"FORMAT", OP_FORMAT}, {"T_OBJECT", T_OBJECT}, {"T_ARRAY", T_ARRAY}, {"T_STRING", T_STRING},
        {"T_BOOLEAN", T_BOOLEAN}, {"T_NULL", T_NULL}, {"T_INTEGER", T_INTEGER},
        {"T_NUMBER", T_NUMBER}, {"T_OTHER", T_OTHER},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) < 0) goto fail;
    Py_INCREF(&program_type);
    if (PyModule_AddObject(module, "Program", (PyObject *)&program_type) < 0) {
        Py_DECREF(&program_type);
        goto fail;
    }
    return module;
fail:
    Py_DECREF(module);
    return NULL;
}

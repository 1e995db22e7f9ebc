/* The per-subschema loop of the schema analysis (`schemas/analysis.py`, `_Analyser._walk_target`):
 * a depth-first walk of one `$ref` target's subschemas that marks each visited, classifies the
 * keywords of those not yet reported, follows `$ref` / `$dynamicRef` and queues the subschemas
 * of each subschema keyword with their JSON pointers.  The rare steps stay Python, called back in
 * the order the walk meets them: `_classify` (a keyword outside the draft's plain ones; beside a
 * draft-07 `$ref`, one but `$ref`, definition containers and plain annotations), `_follow`, `_nested_draft` (`$schema`), `RefIndex.enter` (`$id`),
 * `_unsupported` (a subschema keyword outside the plain ones) and the visit limit's error.
 *
 * Every frame owns references to its node, location, resolver and draft: the callbacks run
 * Python code, so nothing the walk still needs is borrowed across them. */
#include "_walk_pointers.h"

/* A layout code (`configure`'s tables): how a keyword holds subschemas, plus two flags. */
enum { SHAPE_ONE = 1, SHAPE_ONE_OR_LIST = 2, SHAPE_LIST = 3, SHAPE_MAP = 4, SHAPE_MASK = 7,
       DESCENDS = 8, UNPLAIN = 16 };

#define MAX_TABLES 8

/* One draft's keyword tables. */
typedef struct {
    PyObject *name;   /* the draft's name */
    PyObject *plain;  /* frozenset: the keywords needing no classification */
    PyObject *layout; /* dict: subschema keyword -> layout code (definition containers left out) */
    PyObject *ref_plain; /* frozenset: the keywords needing no classification beside a `$ref`
                            that overrides its siblings (draft-07) */
    int ref_only;     /* draft-07: `$ref` overrides its siblings */
} Table;

static Table tables[MAX_TABLES];
static int table_count;
static PyTypeObject *location_type;
static PyObject *nested_draft, *too_many_visits;
static PyObject *s_ref, *s_dynamic_ref, *s_schema, *s_id, *s_defs, *s_definitions, *s_name,
    *s_specification, *s_visits, *s_saw_definitions, *s_follow, *s_classify, *s_unsupported,
    *s_enter, *s_display;

/* A subschema waiting in the walk (every reference owned). */
typedef struct {
    PyObject *node, *here, *resolver, *draft;
    const Table *table;
    char in_unsupported, descended;
} Frame;

typedef struct {
    Frame *items;
    Py_ssize_t len, cap;
} Stack;

static int stack_push(Stack *stack, Frame frame) {
    if (stack->len == stack->cap) {
        Py_ssize_t cap = stack->cap ? 2 * stack->cap : 64;
        Frame *items = PyMem_Realloc(stack->items, cap * sizeof(Frame));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        stack->items = items;
        stack->cap = cap;
    }
    stack->items[stack->len++] = frame;
    return 0;
}

static void frame_clear(Frame *frame) {
    Py_CLEAR(frame->node);
    Py_CLEAR(frame->here);
    Py_CLEAR(frame->resolver);
    Py_CLEAR(frame->draft);
}

/* The table of `draft` (by its name); KeyError, as `PLAIN_KEYWORDS[name]`, for another. */
static const Table *table_of(PyObject *draft) {
    PyObject *name = PyObject_GetAttr(draft, s_name);
    if (name == NULL) return NULL;
    for (int i = 0; i < table_count; i++) {
        int same = PyObject_RichCompareBool(name, tables[i].name, Py_EQ);
        if (same != 0) {
            Py_DECREF(name);
            return same > 0 ? &tables[i] : NULL;
        }
    }
    PyErr_SetObject(PyExc_KeyError, name);
    Py_DECREF(name);
    return NULL;
}

/* Whether every key of `node` is in `plain` (`plain.issuperset(node)`): 1, 0, or -1 on error. */
static int all_plain(PyObject *plain, PyObject *node) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(node, &pos, &key, &value)) {
        int found = PySet_Contains(plain, key);
        if (found <= 0) return found;
    }
    return 1;
}

/* What one walk carries besides its stack. */
typedef struct {
    PyObject *analyser, *index;
    Stack stack;
} Walk;

/* Queue `sub` (a member of `keyword` of the frame's node, at `pointer`, which this steals) as a
 * child; `skipped` is -1 until the keyword's first schema member decides it. */
static int queue_member(Walk *walk, const Frame *frame, PyObject *keyword, int code, PyObject *sub,
                        PyObject *pointer, int *skipped) {
    if (!PyDict_Check(sub) && !PyBool_Check(sub)) {
        Py_XDECREF(pointer);
        return 0; /* no schema (a list of draft-07 `dependencies`, say) */
    }
    if (pointer == NULL) return -1;
    Py_INCREF(sub);
    PyObject *resolver = NULL, *location = NULL;
    if (*skipped < 0) {
        if (frame->in_unsupported || !(code & UNPLAIN)) {
            *skipped = frame->in_unsupported;
        } else {
            PyObject *args[] = {walk->analyser, keyword, frame->node, frame->draft};
            PyObject *verdict = PyObject_VectorcallMethod(s_unsupported, args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            *skipped = verdict == NULL ? -1 : PyObject_IsTrue(verdict);
            Py_XDECREF(verdict);
            if (*skipped < 0) goto error;
        }
    }
    int has_id = PyDict_Check(sub) ? PyDict_Contains(sub, s_id) : 0;
    if (has_id < 0) goto error;
    if (has_id) {
        PyObject *spec = PyObject_GetAttr(frame->draft, s_specification);
        if (spec == NULL) goto error;
        PyObject *args[] = {walk->index, sub, frame->resolver, spec};
        resolver = PyObject_VectorcallMethod(s_enter, args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(spec);
        if (resolver == NULL) goto error;
    } else {
        resolver = Py_NewRef(frame->resolver);
    }
    location = walk_location(location_type, PyTuple_GET_ITEM(frame->here, 0), pointer);
    pointer = NULL;
    if (location == NULL) goto error;
    Frame child = {sub, location, resolver, Py_NewRef(frame->draft), frame->table, (char)*skipped,
                   (char)(frame->descended || (code & DESCENDS))};
    if (stack_push(&walk->stack, child) < 0) {
        frame_clear(&child);
        return -1;
    }
    return 0;
error:
    Py_XDECREF(pointer);
    Py_DECREF(sub);
    Py_XDECREF(resolver);
    Py_XDECREF(location);
    return -1;
}

/* Queue the subschemas `value` (of subschema keyword `keyword`, layout `code`) holds. */
static int queue_keyword(Walk *walk, const Frame *frame, PyObject *keyword, int code, PyObject *value) {
    PyObject *at = walk_joined(PyTuple_GET_ITEM(frame->here, 1), keyword, NULL); /* no keyword needs escaping */
    if (at == NULL) return -1;
    int shape = code & SHAPE_MASK, skipped = -1, failed = 0;
    if (shape == SHAPE_ONE || (shape == SHAPE_ONE_OR_LIST && !PyList_Check(value))) {
        failed = queue_member(walk, frame, keyword, code, value, Py_NewRef(at), &skipped);
    } else if (shape == SHAPE_LIST || shape == SHAPE_ONE_OR_LIST) {
        for (Py_ssize_t i = 0; !failed && PyList_Check(value) && i < PyList_GET_SIZE(value); i++) {
            PyObject *sub = Py_NewRef(PyList_GET_ITEM(value, i));
            char digits[24];
            snprintf(digits, sizeof digits, "%zd", i);
            PyObject *pointer = PyDict_Check(sub) || PyBool_Check(sub) ? walk_joined(at, NULL, digits) : NULL;
            failed = queue_member(walk, frame, keyword, code, sub, pointer, &skipped);
            Py_DECREF(sub);
        }
    } else if (PyDict_Check(value)) { /* a map of subschemas (draft-07 `dependencies`: or strings) */
        Py_ssize_t pos = 0;
        PyObject *key, *sub;
        while (!failed && PyDict_Next(value, &pos, &key, &sub)) {
            Py_INCREF(key);
            Py_INCREF(sub);
            PyObject *pointer = PyDict_Check(sub) || PyBool_Check(sub) ? walk_member_pointer(at, key) : NULL;
            failed = queue_member(walk, frame, keyword, code, sub, pointer, &skipped);
            Py_DECREF(key);
            Py_DECREF(sub);
        }
    }
    Py_DECREF(at);
    return failed ? -1 : 0;
}

/* Queue the children of `frame`'s node (a dict), in the order `reversed` pushes them. */
static int queue_children(Walk *walk, const Frame *frame) {
    Py_ssize_t base = walk->stack.len, pos = 0, size = PyDict_GET_SIZE(frame->node);
    PyObject *keyword, *value;
    while (PyDict_Next(frame->node, &pos, &keyword, &value)) {
        PyObject *code = PyDict_GetItemWithError(frame->table->layout, keyword);
        if (code == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        Py_INCREF(keyword);
        Py_INCREF(value);
        int failed = queue_keyword(walk, frame, keyword, (int)PyLong_AsLong(code), value);
        Py_DECREF(keyword);
        Py_DECREF(value);
        if (failed) return -1;
        if (PyDict_GET_SIZE(frame->node) != size) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
            return -1;
        }
    }
    for (Py_ssize_t lo = base, hi = walk->stack.len - 1; lo < hi; lo++, hi--) {
        Frame swap = walk->stack.items[lo];
        walk->stack.items[lo] = walk->stack.items[hi];
        walk->stack.items[hi] = swap;
    }
    return 0;
}

/* Visit one subschema (a dict): everything but queueing its children; 1 when it has children
 * to queue, 0 when not, -1 on error. */
static int visit(Walk *walk, Frame *frame, PyObject *visited, PyObject *reported, PyObject *found,
                 int *saw_definitions) {
    PyObject *node = frame->node;
    if (PySet_Add(visited, frame->here) < 0) return -1;
    if (!*saw_definitions && (PyDict_Contains(node, s_defs) > 0 || PyDict_Contains(node, s_definitions) > 0)) {
        *saw_definitions = 1;
        if (PyObject_SetAttr(walk->analyser, s_saw_definitions, Py_True) < 0) return -1;
    }
    if (PyDict_Contains(node, s_schema) > 0) {
        PyObject *display_args[] = {walk->index, frame->here};
        PyObject *display = PyObject_VectorcallMethod(s_display, display_args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (display == NULL) return -1;
        PyObject *args[] = {node, frame->draft, display};
        PyObject *draft = PyObject_Vectorcall(nested_draft, args, 3, NULL);
        Py_DECREF(display);
        if (draft == NULL) return -1;
        Py_SETREF(frame->draft, draft);
        if ((frame->table = table_of(draft)) == NULL) return -1;
    }
    const Table *table = frame->table;
    int has_ref = PyDict_Contains(node, s_ref);
    if (has_ref < 0) return -1;
    if (!frame->in_unsupported) {
        int seen = PySet_Contains(reported, frame->here);
        if (seen < 0) return -1;
        if (!seen) {
            if (PySet_Add(reported, frame->here) < 0) return -1;
            int plain = all_plain(has_ref && table->ref_only ? table->ref_plain : table->plain, node);
            if (plain < 0) return -1;
            if (!plain) {
                PyObject *args[] = {walk->analyser, node, frame->here, frame->draft};
                PyObject *done = PyObject_VectorcallMethod(s_classify, args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                if (done == NULL) return -1;
                Py_DECREF(done);
            }
        }
    }
    PyObject *keyword = has_ref ? s_ref : PyDict_Contains(node, s_dynamic_ref) > 0 ? s_dynamic_ref : NULL;
    if (keyword != NULL) {
        PyObject *ref = PyDict_GetItemWithError(node, keyword);
        if (ref == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, keyword);
            return -1;
        }
        Py_INCREF(ref);
        PyObject *args[] = {walk->analyser, ref, frame->here, frame->resolver, frame->draft, keyword};
        PyObject *followed = PyObject_VectorcallMethod(s_follow, args, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(ref);
        int truth = followed == NULL ? -1 : PyObject_IsTrue(followed);
        Py_XDECREF(followed);
        if (truth < 0) return -1;
        if (truth) {
            PyObject *site = PyTuple_Pack(2, frame->here, frame->descended ? Py_True : Py_False);
            if (site == NULL) return -1;
            int failed = PyList_Append(found, site);
            Py_DECREF(site);
            if (failed) return -1;
        }
    }
    return !(table->ref_only && has_ref); /* draft-07 ignores what sits beside `$ref` */
}

static PyObject *walk_target(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "walk_target takes 9 arguments");
        return NULL;
    }
    PyObject *analyser = args[0], *visited = args[1], *reported = args[2];
    long max_visits = PyLong_AsLong(args[8]);
    if (max_visits == -1 && PyErr_Occurred()) return NULL;
    if (!PySet_Check(visited) || !PySet_Check(reported)) {
        PyErr_SetString(PyExc_TypeError, "walk_target: visited and reported must be sets");
        return NULL;
    }
    PyObject *count = PyObject_GetAttr(analyser, s_visits);
    if (count == NULL) return NULL;
    long visits = PyLong_AsLong(count);
    Py_DECREF(count);
    if (visits == -1 && PyErr_Occurred()) return NULL;
    PyObject *saw = PyObject_GetAttr(analyser, s_saw_definitions);
    int saw_definitions = saw == NULL ? -1 : PyObject_IsTrue(saw);
    Py_XDECREF(saw);
    if (saw_definitions < 0) return NULL;
    const Table *table = table_of(args[7]);
    if (table == NULL) return NULL;
    PyObject *found = PyList_New(0);
    if (found == NULL) return NULL;

    Walk walk = {analyser, args[3], {NULL, 0, 0}};
    Frame root = {Py_NewRef(args[4]), Py_NewRef(args[5]), Py_NewRef(args[6]), Py_NewRef(args[7]), table, 0, 0};
    int failed = stack_push(&walk.stack, root);
    if (failed) frame_clear(&root);
    while (!failed && walk.stack.len > 0) {
        Frame frame = walk.stack.items[--walk.stack.len];
        if (++visits > max_visits) {
            PyObject *none = PyObject_CallNoArgs(too_many_visits);
            Py_XDECREF(none);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "too_many_visits returned");
            failed = 1;
        } else if (PyDict_Check(frame.node)) {
            int branches = visit(&walk, &frame, visited, reported, found, &saw_definitions);
            failed = branches < 0 || (branches > 0 && queue_children(&walk, &frame) < 0);
        }
        frame_clear(&frame);
    }

    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *total = PyLong_FromLong(visits);
    if (total == NULL || PyObject_SetAttr(analyser, s_visits, total) < 0) {
        failed = 1;
        if (type != NULL) PyErr_Clear();  /* the walk's own error wins */
    }
    Py_XDECREF(total);
    if (type != NULL) PyErr_Restore(type, value, traceback);
    while (walk.stack.len > 0) frame_clear(&walk.stack.items[--walk.stack.len]);
    PyMem_Free(walk.stack.items);
    if (failed) {
        Py_DECREF(found);
        return NULL;
    }
    return found;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *type, *by_name, *nested, *too_many;
    if (!PyArg_ParseTuple(args, "O!O!OO:configure", &PyType_Type, &type, &PyDict_Type, &by_name, &nested,
                          &too_many))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type) || PyDict_GET_SIZE(by_name) > MAX_TABLES) {
        PyErr_SetString(PyExc_ValueError, "configure: a tuple type and at most 8 drafts");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *name, *entry;
    int count = 0;
    Table fresh[MAX_TABLES];
    while (PyDict_Next(by_name, &pos, &name, &entry)) {
        PyObject *plain, *layout, *ref_plain;
        int ref_only;
        if (!PyArg_ParseTuple(entry, "O!O!O!p:configure", &PyFrozenSet_Type, &plain, &PyDict_Type, &layout,
                              &PyFrozenSet_Type, &ref_plain, &ref_only)) {
            for (int i = 0; i < count; i++) {
                Py_DECREF(fresh[i].name);
                Py_DECREF(fresh[i].plain);
                Py_DECREF(fresh[i].layout);
                Py_DECREF(fresh[i].ref_plain);
            }
            return NULL;
        }
        fresh[count++] = (Table){Py_NewRef(name), Py_NewRef(plain), Py_NewRef(layout), Py_NewRef(ref_plain),
                                 ref_only};
    }
    for (int i = 0; i < table_count; i++) {
        Py_DECREF(tables[i].name);
        Py_DECREF(tables[i].plain);
        Py_DECREF(tables[i].layout);
        Py_DECREF(tables[i].ref_plain);
    }
    memcpy(tables, fresh, count * sizeof(Table));
    table_count = count;
    Py_XSETREF(location_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(nested_draft, Py_NewRef(nested));
    Py_XSETREF(too_many_visits, Py_NewRef(too_many));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(location_type, tables, nested_draft, too_many_visits): the walk's constants; `tables`\n"
     "maps each draft name to (plain keywords, {subschema keyword: layout code}, the plain keywords\n"
     "beside a `$ref` that overrides its siblings, whether `$ref` does)."},
    {"walk_target", (PyCFunction)(void (*)(void))walk_target, METH_FASTCALL,
     "walk_target(analyser, visited, reported, index, schema, location, resolver, draft, max_visits)\n"
     "-> [(location, descended)]: the `$ref` sites met walking one target (`_Analyser._walk_target`)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_analysis_walk", NULL, -1, methods};

static int intern_all(void) {
    struct { PyObject **slot; const char *text; } strings[] = {
        {&s_ref, "$ref"}, {&s_dynamic_ref, "$dynamicRef"}, {&s_schema, "$schema"}, {&s_id, "$id"},
        {&s_defs, "$defs"}, {&s_definitions, "definitions"}, {&s_name, "name"},
        {&s_specification, "specification"}, {&s_visits, "visits"}, {&s_saw_definitions, "saw_definitions"},
        {&s_follow, "_follow"}, {&s_classify, "_classify"}, {&s_unsupported, "_unsupported"},
        {&s_enter, "enter"}, {&s_display, "display"},
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if ((*strings[i].slot = PyUnicode_InternFromString(strings[i].text)) == NULL) return -1;
    return walk_pointers_init();
}

PyMODINIT_FUNC PyInit__analysis_walk(void) {
    if (intern_all() < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddIntConstant(module, "ONE", SHAPE_ONE) < 0 ||
        PyModule_AddIntConstant(module, "ONE_OR_LIST", SHAPE_ONE_OR_LIST) < 0 ||
        PyModule_AddIntConstant(module, "LIST", SHAPE_LIST) < 0 ||
        PyModule_AddIntConstant(module, "MAP", SHAPE_MAP) < 0 ||
        PyModule_AddIntConstant(module, "DESCENDS", DESCENDS) < 0 ||
        PyModule_AddIntConstant(module, "UNPLAIN", UNPLAIN) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

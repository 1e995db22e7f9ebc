/* The strings and locations the analysis walk makes for the subschemas it queues (`_analysis_walk.c`):
 * JSON pointers spelled as `schemas/pointer.py` spells them, and `Location` named tuples. */
#include "_walk_pointers.h"

static PyObject *s_tilde, *s_tilde0, *s_slash, *s_tilde1;

int walk_pointers_init(void) {
    s_tilde = PyUnicode_InternFromString("~");
    s_tilde0 = PyUnicode_InternFromString("~0");
    s_slash = PyUnicode_InternFromString("/");
    s_tilde1 = PyUnicode_InternFromString("~1");
    return s_tilde && s_tilde0 && s_slash && s_tilde1 ? 0 : -1;
}

/* `head + "/" + tail`: `tail` a str, or, when NULL, the ASCII text `digits`. */
PyObject *walk_joined(PyObject *head, PyObject *tail, const char *digits) {
    Py_ssize_t head_len = PyUnicode_GET_LENGTH(head);
    Py_ssize_t tail_len = tail != NULL ? PyUnicode_GET_LENGTH(tail) : (Py_ssize_t)strlen(digits);
    Py_UCS4 max_char = PyUnicode_MAX_CHAR_VALUE(head);
    if (tail != NULL && PyUnicode_MAX_CHAR_VALUE(tail) > max_char) max_char = PyUnicode_MAX_CHAR_VALUE(tail);
    PyObject *out = PyUnicode_New(head_len + 1 + tail_len, max_char);
    if (out == NULL) return NULL;
    if (PyUnicode_CopyCharacters(out, 0, head, 0, head_len) < 0) goto error;
    int kind = PyUnicode_KIND(out);
    void *data = PyUnicode_DATA(out);
    PyUnicode_WRITE(kind, data, head_len, '/');
    if (tail != NULL) {
        if (PyUnicode_CopyCharacters(out, head_len + 1, tail, 0, tail_len) < 0) goto error;
    } else {
        for (Py_ssize_t i = 0; i < tail_len; i++) PyUnicode_WRITE(kind, data, head_len + 1 + i, digits[i]);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* `pointer.child(at, key)`: the key as text (`str` of a non-str), `~` and `/` escaped. */
PyObject *walk_member_pointer(PyObject *at, PyObject *key) {
    PyObject *text = PyUnicode_CheckExact(key) ? Py_NewRef(key) : PyObject_Str(key);
    if (text == NULL) return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_FindChar(text, '~', 0, len, 1) >= 0 || PyUnicode_FindChar(text, '/', 0, len, 1) >= 0) {
        PyObject *once = PyUnicode_Replace(text, s_tilde, s_tilde0, -1);
        Py_SETREF(text, once);
        if (text == NULL) return NULL;
        PyObject *twice = PyUnicode_Replace(text, s_slash, s_tilde1, -1);
        Py_SETREF(text, twice);
        if (text == NULL) return NULL;
    }
    PyObject *out = walk_joined(at, text, NULL);
    Py_DECREF(text);
    return out;
}

/* `Location(uri, pointer)` made as `tuple.__new__` makes it; steals `pointer`. */
PyObject *walk_location(PyTypeObject *location_type, PyObject *uri, PyObject *pointer) {
    if (pointer == NULL) return NULL;
    PyObject *location = location_type->tp_alloc(location_type, 2);
    if (location == NULL) {
        Py_DECREF(pointer);
        return NULL;
    }
    PyTuple_SET_ITEM(location, 0, Py_NewRef(uri));
    PyTuple_SET_ITEM(location, 1, pointer);
    return location;
}

/* JSON pointers and locations for the analysis walk (`_walk_pointers.c`). */
#ifndef FORMWORK_WALK_POINTERS_H
#define FORMWORK_WALK_POINTERS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Interns the escape strings; 0, or -1 with an exception set. */
int walk_pointers_init(void);
/* `head + "/" + tail`: `tail` a str, or, when NULL, the ASCII text `digits`. */
PyObject *walk_joined(PyObject *head, PyObject *tail, const char *digits);
/* `pointer.child(at, key)`: the key as text (`str` of a non-str), `~` and `/` escaped. */
PyObject *walk_member_pointer(PyObject *at, PyObject *key);
/* `location_type(uri, pointer)` made as `tuple.__new__` makes it; steals `pointer` (NULL: fails). */
PyObject *walk_location(PyTypeObject *location_type, PyObject *uri, PyObject *pointer);

#endif

/* rmw's new-message callback for the rclpy backend: count a subscription's
 * messages into an eventfd, so the gateway's event loop wakes for them.
 *
 * Why C: rmw calls it from its own thread for every message, and a Python
 * callback there would take the GIL each time (the thing the eventfd avoids).
 * Why a function of its own: rcl wants void (*)(const void *, size_t);
 * libc's eventfd_write(int, uint64_t) called through that type only works on
 * ABIs that pass both in registers, and is undefined behaviour in C. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>

static void count_into_eventfd(const void *user_data, size_t count)
{
    /* user_data carries the eventfd's number; a closed fd (the gateway
     * stopping) only makes the write fail, which nobody needs to hear. */
    (void)eventfd_write((int)(intptr_t)user_data, (eventfd_t)count);
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_rmw_wake",
    "callback: the address of void count_into_eventfd(const void *fd, size_t count).",
    -1,
    NULL,
};

PyMODINIT_FUNC PyInit__rmw_wake(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *address = PyLong_FromVoidPtr((void *)count_into_eventfd);
    if (address == NULL || PyModule_AddObject(m, "callback", address) < 0) {
        Py_XDECREF(address);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the cmocka test programs. */
#ifndef VG_TEST_UTIL_H
#define VG_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vg/vg.h"

/* ctest maps this exit code to SKIP (SKIP_RETURN_CODE). */
#define VG_TEST_SKIP 77

/* Open the default runtime for a test program's main: 0 with *rt open, else the exit code after
 * saying why: VG_TEST_SKIP without a device (unless VG_REQUIRE_DEVICE=1 demands one), 1 when
 * the runtime cannot be opened. */
static inline int vg_test_open_runtime(vg_runtime **rt)
{
    const char *req = getenv("VG_REQUIRE_DEVICE");
    vg_status st = vg_runtime_open(NULL, rt);
    if (st == VG_ERR_NO_DEVICE && !(req && strcmp(req, "1") == 0)) {
        printf("SKIP: no device: %s\n", vg_last_error());
        return VG_TEST_SKIP;
    }
    if (st != VG_OK) {
        fprintf(stderr, "cannot open a runtime: %s\n", vg_last_error());
        return 1;
    }
    return 0;
}

/* Whether the backend runs a GPU vendor's kernels (cuda, hip): their F32 results hold 1e-3 against
 * Hugging Face, while kunlun_stub and opencl (whose kernels promise it on any device) hold 1e-4. */
static inline int vg_test_gpu_kernels(const vg_runtime *rt)
{
    const char *name = vg_runtime_backend_name(rt);
    return strcmp(name, "kunlun_stub") != 0 && strcmp(name, "opencl") != 0;
}

/* Whether the device replays graphs (VG_CAP_GRAPH): without, the runner runs every mode eagerly. */
static inline int vg_test_graphs(const vg_runtime *rt) { return (vg_runtime_caps(rt) & VG_CAP_GRAPH) != 0; }

/* What a model test learns of its device before its tests run. */
typedef struct vg_model_test_device {
    vg_runtime *rt;
    int gpu;    /* vg_test_gpu_kernels: the tolerances */
    int graphs; /* vg_test_graphs: without, every mode runs eagerly */
} vg_model_test_device;

/* The main() of a model test (test_vit, test_vit3, test_lm): open the runtime into *dev (exit
 * code VG_TEST_SKIP without a device), say which backend `what` is tested on, run the group
 * `name`, close the runtime; the exit code. */
#define vg_model_test_main(what, name, tests, dev)                                               \
    vg_model_test_main_((what), (name), (tests), sizeof(tests) / sizeof((tests)[0]), (dev))
static inline int vg_model_test_main_(const char *what, const char *name,
                                      const struct CMUnitTest *tests, size_t n,
                                      vg_model_test_device *dev)
{
    int rc = vg_test_open_runtime(&dev->rt);
    if (rc) return rc;
    dev->gpu = vg_test_gpu_kernels(dev->rt);
    dev->graphs = vg_test_graphs(dev->rt);
    printf("%s tests on backend '%s'\n", what, vg_runtime_backend_name(dev->rt));
    int failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    vg_runtime_close(dev->rt);
    return failed ? 1 : 0;
}

/* Assert a vg call succeeded; on failure print the library's message first. */
#define VG_CHECK(expr)                                                                   \
    do {                                                                                 \
        vg_status st_ = (expr);                                                          \
        if (st_ != VG_OK)                                                                \
            print_message("%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,          \
                          vg_status_name(st_), vg_last_error());                         \
        assert_int_equal(st_, VG_OK);                                                    \
    } while (0)

/* Assert a call failed with `want` and that the message mentions `needle`. */
#define VG_CHECK_FAILS(expr, want, needle)                                               \
    do {                                                                                 \
        vg_error_clear();                                                                \
        vg_status st_ = (expr);                                                          \
        if (st_ != (want) || !strstr(vg_last_error(), (needle)))                         \
            print_message("%s:%d: %s -> %s: '%s' (wanted %s mentioning '%s')\n",       \
                          __FILE__, __LINE__, #expr, vg_status_name(st_),               \
                          vg_last_error(), vg_status_name(want), (needle));              \
        assert_int_equal(st_, (want));                                                   \
        assert_non_null(strstr(vg_last_error(), (needle)));                              \
    } while (0)

/* Assert a call failed with `want` and that the message mentions both needles: the core's
 * checks name the op and the offending value ("gemm", "lda 37"). */
#define VG_CHECK_FAILS2(expr, want, needle1, needle2)                                    \
    do {                                                                                 \
        vg_error_clear();                                                                \
        vg_status st_ = (expr);                                                          \
        const char *m_ = vg_last_error();                                                \
        if (st_ != (want) || !strstr(m_, (needle1)) || !strstr(m_, (needle2)))           \
            print_message("%s:%d: %s -> %s: '%s' (wanted %s mentioning '%s' and '%s')\n", \
                          __FILE__, __LINE__, #expr, vg_status_name(st_), m_,           \
                          vg_status_name(want), (needle1), (needle2));                   \
        assert_int_equal(st_, (want));                                                   \
        assert_non_null(strstr(vg_last_error(), (needle1)));                             \
        assert_non_null(strstr(vg_last_error(), (needle2)));                             \
    } while (0)

/* Assert a call failed with `want` and that the message mentions every one of the needles that
 * follow (NULL-terminated by the macro): VG_CHECK_FAILS_ALL(call, VG_ERR_INVALID_ARG, "gemm",
 * "lda", "37"). */
static inline void vg_check_fails_all_(vg_status st, vg_status want, const char *expr,
                                       const char *file, int line, ...)
{
    const char *msg = vg_last_error();
    int ok = st == want;
    va_list ap;
    va_start(ap, line);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(msg, n)) {
            print_message("%s:%d: message lacks '%s'\n", file, line, n);
            ok = 0;
        }
    va_end(ap);
    if (!ok) {
        print_message("%s:%d: %s -> %s: '%s' (wanted %s)\n", file, line, expr, vg_status_name(st),
                      msg, vg_status_name(want));
        _fail(file, line);
    }
}
#define VG_CHECK_FAILS_ALL(expr, want, ...)                                              \
    do {                                                                                 \
        vg_error_clear();                                                                \
        vg_status sa_ = (expr);                                                          \
        vg_check_fails_all_(sa_, (want), #expr, __FILE__, __LINE__, __VA_ARGS__,        \
                            (const char *)NULL);                                         \
    } while (0)

#endif

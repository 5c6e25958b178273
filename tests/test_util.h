/* Helpers shared by the cmocka test programs. */
#ifndef VG_TEST_UTIL_H
#define VG_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vg/vg.h"

/* ctest maps this exit code to SKIP (SKIP_RETURN_CODE). */
#define VG_TEST_SKIP 77

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

#endif

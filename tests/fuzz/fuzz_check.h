/* SPDX-License-Identifier: Apache-2.0 */
/* The fuzz targets' invariant check: a broken one aborts, which libFuzzer reports as a crash
 * with the input that caused it. */
#ifndef VG_FUZZ_CHECK_H
#define VG_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c)) abort();                                                                        \
    } while (0)

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by the files of libvg_models. Not installed. */
#ifndef VG_MODELS_UTIL_H
#define VG_MODELS_UTIL_H

#include <time.h>

#define VGM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Return the status of x when it is not VG_OK. */
#define VGM_TRY(x)                                                                               \
    do {                                                                                         \
        vg_status vgm_st_ = (x);                                                                 \
        if (vgm_st_ != VG_OK) return vgm_st_;                                                    \
    } while (0)

/* Host wall time in milliseconds (a monotonic clock), for the calls' total_ms. */
static inline double vgm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif

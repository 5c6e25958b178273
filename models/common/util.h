/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by the files of libvg_models. Not installed. */
#ifndef VG_MODELS_UTIL_H
#define VG_MODELS_UTIL_H

#define VGM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Return the status of x when it is not VG_OK. */
#define VGM_TRY(x)                                                                               \
    do {                                                                                         \
        vg_status vgm_st_ = (x);                                                                 \
        if (vgm_st_ != VG_OK) return vgm_st_;                                                    \
    } while (0)

#endif

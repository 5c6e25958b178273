/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the IPC files of the core (ipc_desc.c, ipc_pool.c, ipc_import.c). */
#ifndef VG_IPC_INTERNAL_H
#define VG_IPC_INTERNAL_H

#include "vg/vg_ipc.h"
#include "vg_internal.h"

/* Every check of vg_ipc_desc_decode on a descriptor in its decoded form (VG_ERR_FORMAT). */
vg_status vg_ipc_desc_check(const vg_ipc_desc *d);

/* VG_OK when rt's device offers IPC (the core checked the section's members at open). */
vg_status vg_ipc_require(const vg_runtime *rt, const char *fn);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Printable names of ops, capability bits and dtypes, and the dtypes each op of the catalogue
 * allows. */
#include "vg_internal.h"

const char *vg_op_name(vg_op_id op)
{
    static const char *const names[VG_OP_COUNT_] = {VG_OP_LIST(VG_OP_LIST_NAME_AT)};
    return (unsigned)op < VG_OP_COUNT_ ? names[op] : NULL;
}

const char *vg_cap_name(uint64_t cap)
{
    if (cap == VG_CAP_GRAPH) return "graph";
    if (cap == VG_CAP_GRAPH_UPDATE) return "graph_update";
    if (cap == VG_CAP_IPC) return "ipc";
    if (cap == VG_CAP_PINNED_HOST) return "pinned_host";
    if (cap == VG_CAP_NATIVE) return "native";
    if (cap == VG_CAP_FOREIGN_CAPTURE) return "foreign_capture";
    if (cap == VG_CAP_GRAPH_LOOP) return "graph_loop";
    if (cap == VG_CAP_COMM) return "comm";
    if (cap == VG_CAP_COMM_CAPTURE) return "comm_capture";
    return NULL;
}

const char *vg_dtype_name(vg_dtype t)
{
    static const char *const names[VG_DTYPE_COUNT_] = {"F32", "F16", "BF16", "I32", "I64", "U8"};
    return (unsigned)t < VG_DTYPE_COUNT_ ? names[t] : NULL;
}

size_t vg_dtype_size(vg_dtype t)
{
    static const size_t sizes[VG_DTYPE_COUNT_] = {4, 2, 2, 4, 8, 1};
    return (unsigned)t < VG_DTYPE_COUNT_ ? sizes[t] : 0;
}

uint32_t vg_op_catalogue_dtypes(uint32_t op)
{
#define DTYPES_AT(ID, value, name, member, dtypes) [value] = (dtypes),
    static const uint32_t dtypes[VG_OP_COUNT_] = {VG_OP_LIST(DTYPES_AT)};
#undef DTYPES_AT
    return op < VG_OP_COUNT_ ? dtypes[op] : 0;
}

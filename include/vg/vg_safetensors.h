/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing safetensors files (Hugging Face's tensor container).
 *
 * The reader memory-maps the file and validates the whole header before handing out anything:
 * header size inside the file, a JSON object, unique names, known dtypes, shapes whose element
 * and byte counts do not overflow, data offsets inside the data buffer that match dtype x shape
 * and do not overlap. Every error names the file and the tensor. Tensor data is not read until
 * the caller touches it. */
#ifndef VG_SAFETENSORS_H
#define VG_SAFETENSORS_H

#include "vg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_ST_MAX_DIMS 8

typedef struct vg_st_file vg_st_file;

typedef struct vg_st_tensor {
    const char *name;
    const char *dtype_name; /* as written in the file: "F32", "BF16", "F64", ... */
    vg_dtype dtype;         /* VG_DTYPE_COUNT_ for dtypes vg does not compute with (F64, I8, ...) */
    size_t elem_size;
    int ndim;
    int64_t shape[VG_ST_MAX_DIMS];
    uint64_t numel;
    const void *data; /* inside the mapping; may be unaligned */
    size_t nbytes;
} vg_st_tensor;

/* Only a regular file: a FIFO, directory or device is refused (VG_ERR_IO, "not a regular file
 * (a FIFO)") before anything can block on it. */
VG_API vg_status vg_st_open(const char *path, vg_st_file **out);
/* Parse a file image already in memory (kept by reference; label names it in messages). */
VG_API vg_status vg_st_open_memory(const void *data, size_t size, const char *label,
                                   vg_st_file **out);
VG_API void vg_st_close(vg_st_file *f);
VG_API const char *vg_st_path(const vg_st_file *f);
VG_API int vg_st_count(const vg_st_file *f);
VG_API const vg_st_tensor *vg_st_at(const vg_st_file *f, int i);
VG_API const vg_st_tensor *vg_st_find(const vg_st_file *f, const char *name);

typedef struct vg_st_write_tensor {
    const char *name;
    vg_dtype dtype;
    int ndim;
    const int64_t *shape;
    const void *data; /* numel x dtype size bytes */
} vg_st_write_tensor;

/* Write tensors to `path` (replaced atomically through a temporary file). */
VG_API vg_status vg_st_write(const char *path, const vg_st_write_tensor *tensors, int count);

#ifdef __cplusplus
}
#endif
#endif

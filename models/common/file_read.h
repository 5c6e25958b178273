/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the files a model is read from (config.json, index files, safetensors): only regular
 * files. A FIFO, a directory or a device is refused by name before anything can block on it:
 * opening a FIFO for reading waits for a writer, reading a device may never end. */
#ifndef VG_MODELS_FILE_READ_H
#define VG_MODELS_FILE_READ_H

#include <stddef.h>

#include "vg/vg_types.h"

/* A read-only descriptor of `path` and the file's size; errors name the path (and the kind of
 * file it is when it is not a regular one). */
vg_status vg_file_open_read(const char *path, int *fd, size_t *size);

/* The whole file, NUL-terminated (the caller frees *text); refused when over `limit` bytes. */
vg_status vg_file_read_text(const char *path, size_t limit, char **text, size_t *len);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a safetensors file through vg_out (cli_output.h), so that --output may name a device,
 * a FIFO or a symbolic link as well as a file. */
#ifndef VG_CLI_SAFETENSORS_H
#define VG_CLI_SAFETENSORS_H

#include "vg/vg_safetensors.h"

/* 0, or 1 after printing "vg <cmd>: cannot write PATH: ...". */
int vg_cli_write_safetensors(const char *cmd, const char *path, const vg_st_write_tensor *t,
                             int count);

#endif

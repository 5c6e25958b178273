/* SPDX-License-Identifier: Apache-2.0 */
/* Opens a runtime through an installed vg: the loader must find the installed plugins. */
#include <stdio.h>
#include <string.h>

#include <vg/vg.h>
#include <vg/vg_dlpack.h> /* with the DLPack header installed beside it */

int main(void)
{
    vg_runtime *rt = NULL;
    if (vg_runtime_open(NULL, &rt) != VG_OK) {
        fprintf(stderr, "consumer: %s\n", vg_last_error());
        return 1;
    }
    printf("consumer: backend %s from %s\n", vg_runtime_backend_name(rt), vg_runtime_plugin_path(rt));
    DLDevice dev;
    if (vg_dlpack_device(rt, &dev) == VG_OK)
        printf("consumer: DLPack device type %d, id %d\n", (int)dev.device_type, (int)dev.device_id);
    int installed = strstr(vg_runtime_plugin_path(rt), "/lib/vg/") != NULL;
    vg_runtime_close(rt);
    return installed ? 0 : 1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Which of the test's own device codes serves a runtime: by its native API, where built. */
#include "foreign.h"

extern const foreign_impl foreign_host;
#ifdef VG_TEST_FOREIGN_OPENCL
extern const foreign_impl foreign_opencl;
#endif
#ifdef VG_TEST_FOREIGN_CUDA
extern const foreign_impl foreign_cuda;
#endif

const foreign_impl *foreign_for(vg_runtime *rt)
{
    vg_native_device nd = {.struct_size = sizeof nd};
    if (vg_runtime_native_device(rt, &nd) != VG_OK) return NULL;
    const foreign_impl *all[] = {
        &foreign_host,
#ifdef VG_TEST_FOREIGN_OPENCL
        &foreign_opencl,
#endif
#ifdef VG_TEST_FOREIGN_CUDA
        &foreign_cuda,
#endif
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->api == nd.api) return all[i];
    return NULL;
}

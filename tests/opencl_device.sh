#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs one test of the opencl backend: opencl_device.sh PROGRAM [ARGS...]
# Where an OpenCL driver is registered (an ICD file where the ICD loader looks for one), a missing
# device is a failure, not a skip (VG_REQUIRE_DEVICE=1): CI, where dev.sh installs PoCL, cannot
# pass these tests by skipping them. Without a driver they exit 77 (SKIP), as GPU tests do.
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
if [ -f "$vendors" ] || ls "$vendors"/*.icd >/dev/null 2>&1; then
    VG_REQUIRE_DEVICE=1
    export VG_REQUIRE_DEVICE
fi
exec "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build dependencies for a GPU machine that cannot reach a package registry.
#   scripts/offline-deps.sh fetch DIR     (on a Debian 12 machine) download the .deb files
#   scripts/offline-deps.sh install DIR   (on the GPU machine) unpack them under DIR/root,
#                                          point their pkg-config files there, and print the
#                                          environment to use:  eval "$(... install DIR)"
# The packages are unpacked into a private prefix, never into /.
set -euo pipefail
# The OpenCL headers and ICD loader build the opencl backend, which then runs on the GPU
# machine's own OpenCL driver where it has one (PoCL is not taken: CI runs it).
packages=(libcmocka0 libcmocka-dev libcjson1 libcjson-dev libopenblas0-pthread
          libopenblas-pthread-dev libgfortran5 ocl-icd-libopencl1 ocl-icd-opencl-dev
          opencl-c-headers)
cmd=${1:-}
dir=${2:-}
usage() { awk 'NR > 1 && /^# SPDX-License-Identifier:/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; }
[ -n "$cmd" ] && [ -n "$dir" ] || { usage; exit 2; }
case "$cmd" in
fetch)
    mkdir -p "$dir"
    (cd "$dir" && apt-get download "${packages[@]}")
    ;;
install)
    dir=$(cd "$dir" && pwd)
    root=$dir/root
    rm -rf "$root" && mkdir -p "$root"
    for deb in "$dir"/*.deb; do dpkg -x "$deb" "$root"; done
    # The .pc files name /usr: make them name the private prefix instead.
    find "$root" -name '*.pc' -exec sed -i -e "s#=/usr#=$root/usr#g" -e "s#-I/usr/#-I$root/usr/#g" -e "s#-L/usr/#-L$root/usr/#g" {} +
    libdirs=$(find "$root" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
    pcdirs=$(find "$root" -name '*.pc' -printf '%h\n' | sort -u | paste -sd:)
    echo "export PKG_CONFIG_PATH=$pcdirs\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
    echo "export LD_LIBRARY_PATH=$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
    # find_package(OpenCL) searches the prefix's include/ and lib/<arch>/
    echo "export CMAKE_PREFIX_PATH=$root/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
    echo "export VG_SKIP_DEPS=1"
    ;;
*) echo "offline-deps.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac

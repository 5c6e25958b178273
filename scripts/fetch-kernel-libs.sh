#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetch the kernel libraries the CUDA backend may build against (header-only, nothing of theirs
# is committed): FlashInfer's CUDA headers from its PyPI wheel, and a CCCL newer than CUDA
# 13.0's (FlashInfer's fastdiv.cuh uses cuda::fast_mod_div, which CCCL 3.0 lacks).
# Usage: scripts/fetch-kernel-libs.sh DEST
# Leaves DEST/flashinfer/include/flashinfer/..., DEST/cccl/include/{cuda,cub,thrust,nv}/... and
# DEST/VERSION (the FlashInfer version), which cmake/VgKernelLibs.cmake (VG_KERNEL_LIBS_DIR;
# included by backends/cuda/CMakeLists.txt) reads. The wheels are pinned by version and sha256;
# an existing complete DEST is kept.
# Exit status: 0 fetched (or already there), 1 failed (no network, no pip, checksum mismatch):
# the build then uses vg's own kernels.
set -euo pipefail

flashinfer_version=0.7.2.post1
flashinfer_wheel=flashinfer_python-0.7.2.post1-py3-none-any.whl
flashinfer_sha256=bfdc18b9e1e4d8d0730fe4343dc0e284cd0c160086de80f99888bc4867922d49
cccl_version=13.3.5.0.6
cccl_wheel=nvidia_cuda_cccl-13.3.5.0.6-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
cccl_sha256=d5230098fa2df5021e1a00c0c4eee41797671a91119d31e892463e5ccf3ee326

say() { echo "fetch-kernel-libs: $*" >&2; }

[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
dest=$1
if [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$flashinfer_version" ] &&
    [ -f "$dest/flashinfer/include/flashinfer/attention/decode.cuh" ] &&
    [ -d "$dest/cccl/include/cuda" ]; then
    exit 0
fi
command -v python3 >/dev/null || { say "no python3 (pip downloads the wheels)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the platform tags pin the CCCL wheel (pure headers, x86_64-tagged) whatever this machine is
if ! timeout 300 python3 -m pip download -q --no-deps --only-binary=:all: --disable-pip-version-check --timeout 20 --retries 1 \
    --platform manylinux_2_17_x86_64 --python-version 3.12 --implementation cp -d "$tmp" \
    "flashinfer-python==$flashinfer_version" "nvidia-cuda-cccl==$cccl_version" >"$tmp/pip.log" 2>&1; then
    say "pip download failed: $(tail -n 1 "$tmp/pip.log")"
    exit 1
fi
check() {
    local sum
    sum=$(sha256sum "$tmp/$1" 2>/dev/null | cut -d' ' -f1)
    [ "$sum" = "$2" ] || { say "$1: sha256 ${sum:-missing}, expected $2"; exit 1; }
}
check "$flashinfer_wheel" "$flashinfer_sha256"
check "$cccl_wheel" "$cccl_sha256"

# Only the header trees vg compiles against: FlashInfer's include/ and CCCL's include/cccl.
python3 - "$tmp" "$flashinfer_wheel" "$cccl_wheel" <<'EOF'
import os, sys, zipfile
tmp, fi, cccl = sys.argv[1:]
def extract(wheel, prefix, to):
    with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
        for n in z.namelist():
            if n.startswith(prefix) and not n.endswith("/") and ".." not in n.split("/"):
                out = os.path.join(tmp, "out", to, n[len(prefix):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(n) as src, open(out, "wb") as dst:
                    dst.write(src.read())
extract(fi, "flashinfer/data/include/", "flashinfer/include")
extract(cccl, "nvidia/cu13/include/cccl/", "cccl/include")
EOF
echo "$flashinfer_version" >"$tmp/out/VERSION"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/out" "$dest"
say "FlashInfer $flashinfer_version and CCCL $cccl_version headers in $dest"

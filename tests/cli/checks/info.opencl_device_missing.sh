# SPDX-License-Identifier: Apache-2.0
unset VG_BACKEND VG_OPENCL_DEVICE VG_OPENCL_PLATFORM
"$VG" info --backend opencl >/dev/null 2>&1 || exit 77
VG_OPENCL_DEVICE=99 "$VG" info --backend opencl >"$T/out" 2>"$T/err"; rc=$?; cat "$T/out" "$T/err"
test $rc -eq 1 && ! grep -q "^selected" "$T/out" &&
grep -q "VG_OPENCL_DEVICE=99 matches no device: device 99 does not exist; [0-9]* devices\{0,1\} present: 0: " "$T/err" &&
VG_OPENCL_DEVICE=99 "$VG" info --backend opencl --json >"$T/j"; test $? -eq 1 &&
grep -q '"selected":[[:space:]]*null' "$T/j" && grep -q "device 99 does not exist" "$T/j"

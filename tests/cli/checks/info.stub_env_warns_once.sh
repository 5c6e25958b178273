# SPDX-License-Identifier: Apache-2.0
VG_STUB_DEVICES=2 VG_STUB_LAUNCH_US=abc VG_STUB_MEM_CAPACITY=lots "$VG" info >"$T/out" 2>"$T/err"; rc=$?; cat "$T/err"
test $rc -eq 0 && test "$(grep -c 'VG_STUB_LAUNCH_US=abc' "$T/err")" -eq 1 &&
test "$(grep -c 'VG_STUB_MEM_CAPACITY=lots' "$T/err")" -eq 1 && grep -q "^  device 1: " "$T/out" &&
VG_STUB_LAUNCH_US=abc encode --output "$T/o.safetensors" >/dev/null 2>"$T/err" &&
test "$(grep -c 'VG_STUB_LAUNCH_US=abc' "$T/err")" -eq 1

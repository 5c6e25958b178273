# SPDX-License-Identifier: Apache-2.0
encode --output "$T/o.safetensors" --expected "$FIX/two_images.expected.safetensors" \
    --tolerance 1e-12 >"$T/out" 2>"$T/err"; rc=$?; cat "$T/out" "$T/err"
test $rc -eq 1 && grep -q "NOT within tolerance" "$T/out"

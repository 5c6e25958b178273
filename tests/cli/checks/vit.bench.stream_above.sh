# SPDX-License-Identifier: Apache-2.0
"$VG" vit bench --config qwen2.5-vl-tiny --dtype f32 --sides 56,112 --capture-sizes 4,8 --stream 3 >"$T/out" &&
cat "$T/out" && grep -q "requests above 8 patches run eagerly: 3 of 3" "$T/out" &&
grep -q "requests run eagerly: 3" "$T/out" && grep -q "padded rows: 0.00%" "$T/out"

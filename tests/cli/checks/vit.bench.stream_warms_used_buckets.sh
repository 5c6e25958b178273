# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
"$VG" vit bench --config qwen2.5-vl-tiny --dtype f32 --stream 3 --sides 56,112 --json >"$T/j" &&
json_has "$T/j" '(s := d["stream"]) and len(s["capture_sizes"]) == 48 and 1 <= s["captures_at_load"] <= 4 and s["captures"] == 0 and s["eager_requests"] == 0'

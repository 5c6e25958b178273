# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
stream --stream 5 --json >"$T/j" && cat "$T/j" &&
json_has "$T/j" 'all(k in d["stream"] for k in ("requests_per_s", "p50_ms", "p99_ms", "mean_ms", "wall_s", "wall_p99_ms", "captures", "captures_at_load", "live_graphs", "graph_bytes", "device_mib_used", "padded_row_share", "requests_above_max_capture", "eager_requests", "capture_sizes"))' &&
json_has "$T/j" '(s := d["stream"]) and s["requests"] == 5 and s["seed"] == 1 and s["captures"] == 0 and s["eager_requests"] == 0 and 0 < s["padded_row_share"] < 1 and s["real_rows"] == s["patches"] and s["p50_ms"] <= s["p99_ms"] and d["peers"] == []' &&
# the five requests are of 64 patches at most: the warm-up captures that bucket, not 128 and 256
json_has "$T/j" '(s := d["stream"]) and s["request_patches_max"] <= 64 and s["captures_at_load"] == 1 and s["live_graphs"] == 1'

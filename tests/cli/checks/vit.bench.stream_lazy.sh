# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
stream --stream 5 --lazy --json >"$T/j" &&
json_has "$T/j" '(s := d["stream"]) and s["warmup"] is False and s["captures_at_load"] == 0 and s["captures"] >= 1 and s["eager_requests"] == s["captures"]'

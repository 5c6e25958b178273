# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
peers "$T/peers.jsonl" && bench --peer "$T/peers.jsonl" >"$T/out" 2>"$T/err" && cat "$T/out" "$T/err" &&
grep -q "7.25 *3.50 *[0-9.]*x *| *4.75 *2.25 *[0-9.]*x" "$T/out" &&
grep -q "1 peer size of another model family left out" "$T/err" &&
bench --peer "$T/peers.jsonl" --json >"$T/j" &&
json_has "$T/j" '(s := d["sizes"][0]) and abs(s["speedup_vs_compiled"] - 2.25 / s["graph_ms"]) < 1e-9 and s["peer_torch_graph_ms"] == 3.5 and s["peer_padded_graph_ms"] == 4.75 and s["peer_hf_eager_ms"] == 7.25'

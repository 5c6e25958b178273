# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
stream --stream 4 --list-only --requests-file "$T/r.jsonl" >/dev/null &&
python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
t = dict(stream="vit", requests=len(r), images=sum(len(x["images"]) for x in r), patches=sum(x["patches"] for x in r))
with open(sys.argv[2], "w") as f:
    print(json.dumps(dict(t, method="sglang", done=4, requests_per_s=0.5, p50_ms=1500.0, p99_ms=2500.0, wall_s=9.0, captures=4, graph_mib=812.5)), file=f)
    print(json.dumps(dict(t, method="compiled", done=2, requests_per_s=0.75, p50_ms=1000.0, p99_ms=1200.0, wall_s=9.0, captures=2, note="stopped after 9 s (--budget-s)")), file=f)
' "$T/r.jsonl" "$T/peer.jsonl" &&
stream --stream-from "$T/r.jsonl" --peer "$T/peer.jsonl" >"$T/out" && cat "$T/out" &&
grep -q "^torch, SGLang's method (graph per exact patch count) *0.50 *1500.00 *2500.00 *4 *812.5 | *[0-9.]*x *[0-9.]*x" "$T/out" &&
grep -q "compiled served 2 of 4 requests (stopped after 9 s (--budget-s)): no ratio" "$T/out" &&
stream --stream-from "$T/r.jsonl" --peer "$T/peer.jsonl" --json >"$T/j" &&
json_has "$T/j" '(p := d["peers"]) and (s := d["stream"]) and abs(p[0]["vg_requests_per_s_ratio"] - s["requests_per_s"] / 0.5) < 1e-6 and abs(p[0]["vg_p99_ratio"] - 2500 / s["p99_ms"]) < 1e-6 and "vg_p99_ratio" not in p[1]'

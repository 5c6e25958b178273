# SPDX-License-Identifier: Apache-2.0
py=${VG_PEER_PYTHON:-python3}
"$py" -c 'import torch, transformers' 2>/dev/null || exit 77
stream --stream 3 --list-only --requests-file "$T/r.jsonl" >/dev/null &&
"$py" "$VG_SRC/tools/peer/peer_vit_stream_torch.py" "$T/r.jsonl" --cpu-smoke >"$T/peer.jsonl" && cat "$T/peer.jsonl" &&
stream --stream-from "$T/r.jsonl" --peer "$T/peer.jsonl" >"$T/out" && cat "$T/out" &&
grep -q "^torch, SGLang's method .*| *[0-9.]*x *[0-9.]*x" "$T/out" &&
grep -q "^torch, padded + compiled.*| *[0-9.]*x *[0-9.]*x" "$T/out" &&
"$py" -c 'import json, sys; l = [json.loads(x) for x in open(sys.argv[1])]; sys.exit(0 if [x["method"] for x in l] == ["sglang", "compiled"] and all(x["rel_err_max"] < 1e-5 and x["done"] == 3 for x in l) else 1)' "$T/peer.jsonl"

# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
stream --stream 4 --seed 7 --requests-file "$T/a.jsonl" --json >"$T/ja" &&
stream --stream-from "$T/a.jsonl" --requests-file "$T/b.jsonl" --json >"$T/jb" && cmp "$T/a.jsonl" "$T/b.jsonl" &&
python3 -c 'import json, sys; a, b = (json.load(open(f))["stream"] for f in sys.argv[1:]); sys.exit(0 if all(a[k] == b[k] for k in ("requests", "images", "patches", "real_rows", "padded_rows")) and b["stream_from"].endswith("a.jsonl") else 1)' "$T/ja" "$T/jb" &&
python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if [x["request"] for x in r] == [0, 1, 2, 3] and all(x["patch"] == 14 and x["patches"] == sum(h * w // 196 for h, w in x["images"]) for x in r) else 1)' "$T/a.jsonl"

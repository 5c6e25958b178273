# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
l() { "$VG" vit bench --config qwen2.5-vl-tiny --stream 400 --list-only --requests-file "$@"; }
l "$T/a.jsonl" >"$T/out" && grep -q "400 requests written to $T/a.jsonl" "$T/out" &&
l "$T/b.jsonl" && l "$T/c.jsonl" --seed 2 && cmp "$T/a.jsonl" "$T/b.jsonl" && ! cmp -s "$T/a.jsonl" "$T/c.jsonl" &&
python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
imgs = [hw for x in r for hw in x["images"]]
counts = [len(x["images"]) for x in r]
assert len(r) == 400 and sorted(set(counts)) == [1, 2, 3, 4], set(counts)
assert all(s % 28 == 0 and 224 <= s <= 1344 for hw in imgs for s in hw)
assert sum(h != w for h, w in imgs) > 0.6 * len(imgs)
assert sum(h > w for h, w in imgs) > 0.2 * len(imgs) and sum(h < w for h, w in imgs) > 0.2 * len(imgs)
assert len({x["patches"] for x in r}) > 200
' "$T/a.jsonl"

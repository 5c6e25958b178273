# SPDX-License-Identifier: Apache-2.0
in=$LMB/prompts.input.safetensors
"$VG" lm generate --model "$LMB/model" --input "$in" --ignore-eos --json >"$T/all" &&
x=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["generated"]; g = a[1]; k = min(i for i in range(3, len(g) - 1) if g[i] not in g[:i] and g[i] != a[0][0]); print(a[0][0], g[k], k)' "$T/all") &&
set -- $x && e0=$1 e1=$2 k=$3 && echo "EOS $e0 and $e1 (prompt 1, after $k tokens)" &&
"$VG" lm generate --model "$LMB/model" --input "$in" --eos $e0,$e1 --json --output "$T/host.st" >"$T/host" &&
"$VG" lm generate --model "$LMB/model" --input "$in" --eos $e0,$e1 --json --output "$T/dev.st" --device-loop >"$T/dev" &&
"$VG" lm generate --model "$LMB/model" --input "$in" --eos $e0,$e1 --device-loop --stats >"$T/stats" &&
grep -q "device loop: on the device, [1-9][0-9]* step(s) in 1 launch" "$T/stats" &&
python3 -c 'import json, struct, sys; hd = lambda f: (lambda b: json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]]))(open(f, "rb").read()); h, d = hd(sys.argv[1]), hd(sys.argv[2]); sys.exit(0 if all(h[n]["shape"] == d[n]["shape"] for n in h if n != "__metadata__") and d["logits.1"]["shape"][0] == int(sys.argv[3]) + 1 else 1)' "$T/host.st" "$T/dev.st" "$k" &&
python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2])); k = int(sys.argv[3]); sys.exit(0 if h["generated"] == d["generated"] and h["stopped_at_eos"] == d["stopped_at_eos"] and d["stopped_at_eos"][0] and len(d["generated"][0]) == 1 and d["stopped_at_eos"][1] and len(d["generated"][1]) == k + 1 else 1)' "$T/host" "$T/dev" "$k"

# SPDX-License-Identifier: Apache-2.0
in=$LMB/prompts.input.safetensors
"$VG" lm generate --model "$LMB/model" --input "$in" --ignore-eos --json >"$T/all" &&
eos=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["generated"][0][0])' "$T/all") &&
"$VG" lm generate --model "$LMB/model" --input "$in" --eos "$eos" --json >"$T/cut" &&
python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["generated"]; c = json.load(open(sys.argv[2]))["generated"]; e = a[0][0]; sys.exit(0 if c[0] == [e] and all(c[b] == (a[b][:a[b].index(e) + 1] if e in a[b] else a[b]) for b in range(1, 4)) and any(len(c[b]) == 16 for b in range(1, 4)) else 1)' "$T/all" "$T/cut"

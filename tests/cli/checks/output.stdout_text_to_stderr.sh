# SPDX-License-Identifier: Apache-2.0
encode --output /dev/stdout >"$T/o.safetensors" 2>"$T/err" && cat "$T/err" &&
grep -q "written to /dev/stdout" "$T/err" && ! grep -aq "patches -> embeddings" "$T/o.safetensors" &&
encode --output "$T/check.safetensors" --expected "$T/o.safetensors" --tolerance 0 >/dev/null &&
gen --prompt-ids 1,2 --max-new-tokens 3 --output /dev/stdout >"$T/l.safetensors" 2>"$T/err" && cat "$T/err" &&
grep -q "^0: " "$T/err" && ! grep -aq "^0: " "$T/l.safetensors" &&
python3 -c 'import struct, json, sys; b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); sys.exit(0 if len(b) == 8 + n + max(v["data_offsets"][1] for v in h.values()) else 1)' "$T/l.safetensors"

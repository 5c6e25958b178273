# SPDX-License-Identifier: Apache-2.0
# The checks of vg lm generate, vg lm bench and vg vit encode on bad requests (issue 28), after
# prelude.sh: the tiny decoders, st_patch and st_write (python3; SKIP without it), lm_copy, gen.
LM=$VG_SRC/tests/data/qwen2_tiny
LMB=$VG_SRC/tests/data/qwen2_tiny_bf16_sharded # its greedy tokens vary (qwen2_tiny's repeat one)
command -v python3 >/dev/null || exit 77
st_patch() { python3 - "$@" <<'PY'
import json, struct, sys
src, dst, name, value = sys.argv[1:5]
b = bytearray(open(src, 'rb').read()); n = struct.unpack('<Q', b[:8])[0]; e = json.loads(b[8:8 + n])[name]
s, t = e['data_offsets']; b[8 + n + s:8 + n + t] = struct.pack('<f', float(value)) * ((t - s) // 4)
open(dst, 'wb').write(b)
PY
}
st_write() { python3 - "$@" <<'PY'
import json, struct, sys
h, data = {}, b''
for spec in sys.argv[2:]:
    name, dt, vals = spec.split(' '); v = [int(x) for x in vals.split(',')]
    raw = struct.pack('<%d%s' % (len(v), 'q' if dt == 'I64' else 'i'), *v)
    h[name] = {'dtype': dt, 'shape': [len(v)], 'data_offsets': [len(data), len(data) + len(raw)]}; data += raw
j = json.dumps(h).encode(); j += b' ' * (-len(j) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(j)) + j + data)
PY
}
# lm_copy SRC DST: a model directory of links to SRC's files, to add one
lm_copy() { mkdir -p "$2" && ln -s "$1"/* "$2/"; }
gen() { "$VG" lm generate --model "$LM/model" "$@"; }

# SPDX-License-Identifier: Apache-2.0
python3 - "$FIX/two_images.input.safetensors" "$T/in.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
s, e = h['grid_thw']['data_offsets']; g = b[8 + n + s:8 + n + e]
big = struct.pack('<3q', 1 << 40, 1 << 40, 1 << 40) + g[24:] if h['grid_thw']['dtype'] == 'I64' else None
open(sys.argv[2], 'wb').write(b[:8 + n + s] + big + b[8 + n + e:])
PY
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$T/in.safetensors" --output "$T/o" \
    --expected "$FIX/two_images.expected.safetensors" &&
grep -q "grid_thw\[0\] = (1099511627776, 1099511627776, 1099511627776): each of t, h, w must be in \[1, " "$T/err"

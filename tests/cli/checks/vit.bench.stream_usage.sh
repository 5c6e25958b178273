# SPDX-License-Identifier: Apache-2.0
u() { fails 2 "$T/err" vit bench "$@"; }
u --seed 3 && grep -q "seed needs --stream N or --stream-from FILE" "$T/err" &&
u --stream 3 --sizes 224 && grep -q "sizes belongs to the per-size benchmark, not to --stream" "$T/err" &&
u --stream 3 --pieces && grep -q "pieces belongs to the per-size benchmark" "$T/err" &&
u --stream 3 --stream-from x && grep -q "give --stream N or --stream-from FILE, not both" "$T/err" &&
u --stream-from x --seed 2 && grep -q "seed draws a request list; --stream-from reads one" "$T/err" &&
u --stream 0 && grep -q "stream wants an integer in \[1, 1000000\], got '0'" "$T/err" &&
u --stream 3 --capture-sizes 64,32 && grep -q "capture-sizes wants up to 256 patch counts in ascending order" "$T/err" &&
u --stream 3 --config qwen2.5-vl-tiny --capture-sizes 66 && grep -q "capture-sizes: 66 is not a multiple of spatial merge^2 = 4" "$T/err" &&
u --stream 3 --sides 112,28 && grep -q "sides wants LO,HI in pixels" "$T/err" &&
u --stream 3 --config qwen2.5-vl-tiny --sides 30,112 && grep -q "sides: 30 and 112 must be multiples of 28" "$T/err" &&
u --stream 3 --list-only && grep -q "list-only needs --requests-file FILE" "$T/err" &&
u --config qwen2.5-vl-tiny --sizes 30 && grep -q "sizes: 30 pixels is not a multiple of 28 (spatial merge 2 x patch 14)" "$T/err"

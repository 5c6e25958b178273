# SPDX-License-Identifier: Apache-2.0
r() { printf '%s\n' "$@" >"$T/r.jsonl"; fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --stream-from "$T/r.jsonl"; }
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --stream-from "$T/absent.jsonl" &&
grep -q "cannot read the request file $T/absent.jsonl: No such file or directory" "$T/err" &&
r '{"images": [[56, 56]]}' 'not json' && grep -q "r.jsonl:2: not a request" "$T/err" &&
r '{"images": [[56, 56]]} {"images": [[56, 56]]}' && grep -q "r.jsonl:1: not a request" "$T/err" &&
r '{"images": []}' && grep -q "r.jsonl:1: a request holds 1 to 16 images, this one 0" "$T/err" &&
r '{"images": [[56, 56, 56]]}' && grep -q "r.jsonl:1: image 1 is not \[height, width\]" "$T/err" &&
r '{"images": [[56, -56]]}' && grep -q "r.jsonl:1: image 1 is not \[height, width\]" "$T/err" &&
r '{"images": [[56, 56]]}' '{"images": [[56, 30]]}' &&
grep -q "r.jsonl:2: image 1 is 56x30 pixels; sides must be multiples of 28" "$T/err" &&
r '{"patch": 16, "images": [[64, 64]]}' && grep -q "the requests were made for patches of 16 pixels; this model's are 14" "$T/err" &&
r '{"patch": 14, "images": [[56, 56]]}' '{"patch": 16, "images": [[56, 56]]}' && grep -q "r.jsonl:2: \"patch\" is 16, an earlier line said 14" "$T/err" &&
r '{"images": [[56, 56]], "patches": 17}' && grep -q "r.jsonl:1: \"patches\" says 17, the images make 16" "$T/err" &&
r '' && grep -q "the request file $T/r.jsonl holds no requests" "$T/err"

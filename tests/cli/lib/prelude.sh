# SPDX-License-Identifier: Apache-2.0
# What every check of tests/cli/checks starts with (vg_cli_script sources it first): its own empty
# folder $T, and the functions that tests/cli/CMakeLists.txt describes.
set -u
rm -rf "$T" && mkdir -p "$T" || exit 1
encode() { "$VG" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" "$@"; }
bench() { "$VG" vit bench --config qwen2.5-vl-tiny --dtype f32 --sizes 56 --iters 2 "$@"; }
stream() { case $1 in --stream) sides="--sides 28,112" ;; *) sides= ;; esac
  "$VG" vit bench --config qwen2.5-vl-tiny --dtype f32 --capture-sizes 64,128,256 $sides "$@"; }
peers() { printf '%s\n' \
  '{"side": 56, "S": 16, "hf_eager_ms": 7.25, "torch_blocks_eager_ms": 5.0, "torch_blocks_graph_ms": 3.5}' \
  '{"side": 56, "S": 16, "compile_mode": "default", "padded_graph_ms": 4.75, "compiled_graph_ms": 2.25}' \
  '{"side": 64, "S": 16, "hf_eager_ms": 9.5, "torch_graph_ms": 8.5, "compiled_graph_ms": 8.25}' >"$1"; }
fails() { want=$1 err=$2; shift 2; "$VG" "$@" 2>"$err"; got=$?; cat "$err" >&2; test "$got" -eq "$want"; }
json_has() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"; }

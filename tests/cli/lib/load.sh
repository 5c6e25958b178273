# SPDX-License-Identifier: Apache-2.0
# The checks of model loading, after prelude.sh: the tiny decoder and Qwen3-VL tower, patch_nan.
LM="$VG_SRC/tests/data/qwen2_tiny" V3="$VG_SRC/tests/data/qwen3_vl_tiny"
# patch_nan FILE TENSOR: element 0 of the F32 tensor TENSOR becomes NaN, in place
patch_nan() { n=$(od -An -t u8 -N8 "$1" | tr -d ' ') &&
  off=$(head -c $((8 + n)) "$1" | tail -c "$n" | grep -o "\"$2\":{[^}]*}" |
        sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/') && [ -n "$off" ] &&
  printf '\000\000\300\177' | dd of="$1" bs=1 seek=$((8 + n + off)) conv=notrunc 2>/dev/null; }

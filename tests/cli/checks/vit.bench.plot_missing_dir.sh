# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 --iters 100000 \
    --plot /nonexistent/dir/p.svg && grep -q "cannot write /nonexistent/dir/p.svg" "$T/err"

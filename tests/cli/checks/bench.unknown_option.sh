# SPDX-License-Identifier: Apache-2.0
fails 2 "$T/err" bench runner --frobnicate &&
grep -q "unknown option '--frobnicate'; the options are --backend --kernels --iters --json --launch-us" "$T/err"

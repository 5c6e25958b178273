# SPDX-License-Identifier: Apache-2.0
fails 2 "$T/err" bench launch --kernels 0 && grep -q "kernels wants an integer in \[1, 100000\], got '0'" "$T/err"

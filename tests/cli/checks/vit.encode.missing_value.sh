# SPDX-License-Identifier: Apache-2.0
fails 2 "$T/err" vit encode --repeat && grep -q "repeat needs a value: an integer in \[1, 1000000\]" "$T/err"

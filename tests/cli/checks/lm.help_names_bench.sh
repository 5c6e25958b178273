# SPDX-License-Identifier: Apache-2.0
"$VG" lm --help | grep -q "^ *vg lm bench --config" && "$VG" lm 2>"$T/err"; test $? -eq 2 &&
grep -q "^ *vg lm bench --config" "$T/err" && "$VG" lm generate --help | grep -q -- "--ignore-eos"

# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
"$VG" bench launch --kernels 20 --iters 3 --json >"$T/j" && json_has "$T/j" 'd["bench"] == "launch"'

# SPDX-License-Identifier: Apache-2.0
"$VG" info >/dev/full; test $? -eq 1

#!/usr/bin/env bash
# The SPDX license line in every tracked source file of a git checkout.
#   scripts/spdx.sh [DIR]           add it where it lacks: '/* SPDX-License-Identifier: Apache-2.0 */'
#                                   in C, C++, CUDA and HIP files, '# SPDX-...' in shell, CMake,
#                                   Python and pkg-config files; first line, or after a shebang
#                                   (and after a Python coding line); running it twice changes nothing
#   scripts/spdx.sh --check [DIR]   list the files that lack it; exit 1 if any does
# DIR: the checkout (default: the one holding this script). Files with the line in their
# first three lines are left alone; untracked files, symlinks and other types are not touched.
set -euo pipefail
license=Apache-2.0
check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
case ${1:-} in -*) awk 'NR > 1 && /^# SPDX-License-Identifier:/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;; esac
dir=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$dir"

# The comment style of a file, or nothing when it is not a source file this covers.
style() {
    case $1 in
    *.c | *.h | *.cu | *.cuh | *.cc | *.cpp | *.hpp | *.hip) echo c ;;
    *.sh | *.bash | *.py | *.cmake | *.cmake.in | *.pc.in | CMakeLists.txt | */CMakeLists.txt) echo hash ;;
    *)
        # extensionless scripts (.ci/run): by their shebang
        case ${1##*/} in
        *.*) ;;
        *) if [ "$(head -c 2 "$1")" = '#!' ]; then echo hash; fi ;;
        esac
        ;;
    esac
}

missing=0
while IFS= read -r -d '' f; do
    if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
    s=$(style "$f")
    [ -n "$s" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier:' && continue
    if [ $check = 1 ]; then
        echo "$f"
        missing=$((missing + 1))
        continue
    fi
    if [ "$s" = c ]; then line="/* SPDX-License-Identifier: $license */"; else line="# SPDX-License-Identifier: $license"; fi
    # after a shebang, and after a Python coding declaration (it must stay in the first two lines)
    skip=0
    [ "$(head -c 2 "$f")" = '#!' ] && skip=1
    if [[ $f == *.py ]] && sed -n "$((skip + 1))p" "$f" | grep -Eq '^[ \t\f]*#.*coding[:=]'; then
        skip=$((skip + 1))
    fi
    tmp=$(mktemp)
    awk -v n="$skip" -v line="$line" 'NR == n + 1 { print line } { print } END { if (NR <= n) print line }' "$f" >"$tmp"
    cat "$tmp" >"$f" # keeps the file's mode
    rm -f "$tmp"
done < <(git ls-files -z)

if [ $check = 1 ] && [ $missing -gt 0 ]; then
    echo "spdx.sh: $missing file(s) lack 'SPDX-License-Identifier: $license' (run scripts/spdx.sh)" >&2
    exit 1
fi
exit 0

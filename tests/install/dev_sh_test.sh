#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests of scripts/dev.sh and scripts/spdx.sh, run by ctest (tests/install/tests.cmake):
#   dev_sh_test.sh SOURCE_DIR WORK_DIR CASE
# CASE: backends  a configure cached with cuda, hip and opencl OFF builds every backend whose
#                 toolchain is here once dev.sh configures, and dev.sh says which in one line
#       summary   the test command keeps ctest's closing lines, adds 'vg tests: N passed,
#                 M failed, K skipped' and exits with ctest's status
#       quiet     the build's output goes to build.log: one progress line, the log's tail on
#                 failure
#       progress  off a terminal, a long build prints its percent and seconds every
#                 progress_every seconds (30 in dev.sh), even while the compiler is silent
#       run_scope run builds only the backends this machine can run: cuda with an NVIDIA GPU,
#                 opencl with a registered driver; every other command, each one with a toolchain
#       main_job  dev.sh run checks the embeddings against the two_images fixture
#       build_dir a relative VG_BUILD_DIR is made absolute (the scripts dev.sh calls cd), in
#                 dev.sh and in the scripts that read it themselves
#       spdx      spdx.sh adds the SPDX line where it lacks, after a shebang, idempotently;
#                 --check lists what lacks it and exits 1
#       spdx_tree every tracked source file of SOURCE_DIR has the SPDX line (77: not a git tree)
set -uo pipefail
src=${1:?usage: dev_sh_test.sh SOURCE_DIR WORK_DIR CASE}
work=${2:?}
case_=${3:?}
rm -rf "$work" && mkdir -p "$work"
unset VG_CMAKE_ARGS VG_BUILD_DIR
fail() {
    echo "FAIL: $*"
    exit 1
}
# dev.sh's functions, in a subshell: dev_sh 'commands...'
dev_sh() { (source "$src/scripts/dev.sh" && eval "$1"); }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$2/CMakeCache.txt"; }

# A small CMake project: $1 = directory, $2 = CMake code after project()
tiny_project() {
    mkdir -p "$1"
    printf 'cmake_minimum_required(VERSION 3.25)\nproject(tiny C)\n%s\n' "$2" >"$1/CMakeLists.txt"
}

case $case_ in
backends)
    b=$work/build
    cmake -S "$src" -B "$b" -DVG_BUILD_CUDA=OFF -DVG_BUILD_HIP=OFF -DVG_BUILD_OPENCL=OFF \
        -DVG_BUILD_TESTS=OFF -DVG_BUILD_TOOLS=OFF >/dev/null || fail "first configure"
    out=$(dev_sh "build='$b'; configure" 2>&1) || fail "dev.sh configure: $out"
    echo "$out"
    line=$(grep '^dev.sh: backends built:' <<<"$out") || fail "no 'backends built' line"
    [ "$(grep -c . <<<"$out")" -eq 1 ] || fail "configure printed more than one line"
    want_cuda=OFF want_hip=OFF
    if command -v nvcc >/dev/null || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then want_cuda=ON; fi
    command -v hipcc >/dev/null && want_hip=ON
    [ "$(cache_value VG_BUILD_CUDA "$b")" = $want_cuda ] || fail "VG_BUILD_CUDA is $(cache_value VG_BUILD_CUDA "$b"), want $want_cuda"
    [ "$(cache_value VG_BUILD_HIP "$b")" = $want_hip ] || fail "VG_BUILD_HIP is $(cache_value VG_BUILD_HIP "$b"), want $want_hip"
    for b_ in cuda hip; do
        want=$want_cuda
        [ $b_ = hip ] && want=$want_hip
        if [ "$want" = ON ]; then
            [[ ${line%%;*} == *" $b_"* ]] || fail "the line does not name $b_ as built"
        else
            [[ $line == *"not built:"*"$b_ (no "* ]] || fail "the line does not say why $b_ is not built"
        fi
    done
    # opencl decides at every configure: built when CMake finds OpenCL, whatever was cached
    [ "$(cache_value VG_BUILD_OPENCL "$b")" = AUTO ] || fail "VG_BUILD_OPENCL is $(cache_value VG_BUILD_OPENCL "$b"), want AUTO"
    if grep -q 'opencl=ON' "$b/build.log"; then
        [[ ${line%%;*} == *" opencl"* ]] || fail "the line does not name opencl as built"
    else
        [[ $line == *"not built:"*"opencl ("* ]] || fail "the line does not say why opencl is not built"
    fi
    # nvcc gone (CUDA_HOME elsewhere, PATH without it): cuda is switched off again, and said so
    path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do [ -x "$d/nvcc" ] || echo "$d"; done | paste -sd:)
    if PATH=$path command -v nvcc >/dev/null; then
        echo "nvcc in a directory the build needs; the no-nvcc half is not checked"
    else
        out=$(PATH=$path CUDA_HOME=$work/none dev_sh "build='$b'; configure" 2>&1) || fail "dev.sh configure without nvcc: $out"
        echo "$out"
        [ "$(cache_value VG_BUILD_CUDA "$b")" = OFF ] || fail "VG_BUILD_CUDA stayed ON without nvcc"
        grep -q 'not built: cuda (no nvcc)' <<<"$out" || fail "the line does not say cuda is not built"
    fi
    echo "PASS"
    ;;
summary)
    tiny_project "$work/p" '
enable_testing()
add_test(NAME pass COMMAND true)
add_test(NAME pass2 COMMAND true)
add_test(NAME fail COMMAND false)
add_test(NAME skip COMMAND sh -c "exit 77")
add_test(NAME skip2 COMMAND sh -c "exit 77")
set_tests_properties(skip skip2 PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME notrun COMMAND /nonexistent/program)
add_test(NAME off COMMAND true)
set_tests_properties(off PROPERTIES DISABLED TRUE)'
    cmake -S "$work/p" -B "$work/b" >/dev/null || fail "configure"
    out=$(dev_sh "build='$work/b'; run_ctest" 2>&1)
    st=$?
    echo "$out"
    [ $st -eq 8 ] || fail "exit status $st, ctest's is 8"
    grep -q '2 tests failed out of 6' <<<"$out" || fail "ctest's closing line is missing"
    [ "$(tail -n 1 <<<"$out")" = "vg tests: 2 passed, 2 failed, 2 skipped, 1 disabled (GPU tests skip without a GPU)" ] ||
        fail "last line: $(tail -n 1 <<<"$out")"
    tiny_project "$work/q" 'enable_testing()
add_test(NAME pass COMMAND true)'
    cmake -S "$work/q" -B "$work/c" >/dev/null || fail "configure"
    out=$(dev_sh "build='$work/c'; run_ctest" 2>&1) || fail "exit status $?, ctest's is 0"
    [ "$(tail -n 1 <<<"$out")" = "vg tests: 1 passed, 0 failed, 0 skipped" ] || fail "last line: $(tail -n 1 <<<"$out")"
    echo "PASS"
    ;;
quiet)
    tiny_project "$work/p" 'add_library(t STATIC t.c)'
    printf '#warning compiler chatter\nint t(void) { return 0; }\n' >"$work/p/t.c"
    cmake -S "$work/p" -B "$work/b" >"$work/b.log" 2>&1 || fail "configure"
    out=$(dev_sh "build='$work/b'; quiet_build" 2>&1) || fail "build failed: $out"
    echo "$out"
    [ "$(grep -c . <<<"$out")" -eq 1 ] || fail "more than one line"
    grep -q '^dev.sh: building in .*build.log.*done' <<<"$out" || fail "no progress line"
    grep -q 'chatter' <<<"$out" && fail "compiler output shown"
    grep -q 'chatter' "$work/b/build.log" || fail "compiler output not in build.log"
    printf '#error the build broke here\n' >"$work/p/t.c"
    out=$(dev_sh "build='$work/b'; quiet_build" 2>&1) && fail "a failed build returned 0"
    echo "$out"
    grep -q 'the build broke here' <<<"$out" || fail "the log's tail is not shown on failure"
    grep -q "full log: $work/b/build.log" <<<"$out" || fail "the log is not named on failure"
    echo "PASS"
    ;;
progress)
    # a target that prints nothing for 3 s, then one that says 100%
    tiny_project "$work/p" 'add_custom_target(slow ALL COMMAND sleep 3)'
    cmake -S "$work/p" -B "$work/b" >"$work/b.log" 2>&1 || fail "configure"
    out=$(dev_sh "build='$work/b'; progress_every=1; quiet_build" 2>&1) || fail "build failed: $out"
    echo "$out"
    head -n 1 <<<"$out" | grep -q '^dev.sh: building in .*build.log) \.\.\. $' || fail "first line: $(head -n 1 <<<"$out")"
    [ "$(grep -c '^dev.sh: building: [0-9]*% after [0-9]* s$' <<<"$out")" -ge 2 ] || fail "fewer than two progress lines"
    tail -n 1 <<<"$out" | grep -q '^dev.sh: build done, [0-9]* s$' || fail "last line: $(tail -n 1 <<<"$out")"
    grep -q 'Built target slow' "$work/b/build.log" || fail "the build's output is not in build.log"
    echo "PASS"
    ;;
run_scope)
    # stand-ins: an nvcc on PATH, nvidia-smi listing a GPU or none, OpenCL drivers in a folder
    mkdir -p "$work/bin" "$work/icd" "$work/noicd"
    printf '#!/bin/sh\nexit 0\n' >"$work/bin/nvcc"
    printf '#!/bin/sh\n[ -n "${FAKE_GPU:-}" ] && echo "GPU 0: Fake GPU (UUID: GPU-0)"\nexit 0\n' >"$work/bin/nvidia-smi"
    chmod +x "$work/bin/nvcc" "$work/bin/nvidia-smi"
    touch "$work/icd/fake.icd"
    flags() { PATH=$work/bin:$PATH OCL_ICD_VENDORS=$2 FAKE_GPU=${3:-} dev_sh "build_scope=$1; backend_toolchains; echo \"\${backend_flags[*]}\" \"\${left_out[cuda]:-}\" \"\${left_out[opencl]:-}\""; }
    out=$(flags all "$work/noicd")
    echo "all: $out"
    [[ $out == *"-DVG_BUILD_CUDA=ON"*"-DVG_BUILD_OPENCL=AUTO"* ]] || fail "test and build must build every backend with a toolchain"
    out=$(flags usable "$work/icd" 1)
    echo "usable, a GPU, a driver: $out"
    [[ $out == *"-DVG_BUILD_CUDA=ON"*"-DVG_BUILD_OPENCL=AUTO"* ]] || fail "run must build cuda with a GPU, opencl with a driver"
    out=$(flags usable "$work/icd/fake.icd" 1)
    [[ $out == *"-DVG_BUILD_OPENCL=AUTO"* ]] || fail "OCL_ICD_VENDORS naming one .icd file is a driver"
    if [ -e /dev/nvidia0 ]; then
        echo "an NVIDIA device node here: the no-GPU half is not checked"
    else
        out=$(flags usable "$work/noicd")
        echo "usable, no GPU, no driver: $out"
        [[ $out == *"-DVG_BUILD_CUDA=OFF"*"-DVG_BUILD_OPENCL=OFF"* ]] || fail "run built a backend this machine cannot run"
        [[ $out == *"no NVIDIA GPU here; dev.sh test builds it"*"no OpenCL driver registered"* ]] || fail "no reason given"
    fi
    echo "PASS"
    ;;
build_dir)
    mkdir -p "$work/cwd" && cd "$work/cwd" || fail "cd"
    got=$(VG_BUILD_DIR=rel/b dev_sh 'echo "$build"')
    [ "$got" = "$work/cwd/rel/b" ] || fail "dev.sh: build is '$got', want $work/cwd/rel/b"
    for s in python-test.sh fuzz.sh sanitize.sh; do # they read it themselves
        grep -qE '^\[\[ \$(build|base) == /\* \]\] \|\| (build|base)=\$PWD/' "$src/scripts/$s" ||
            fail "$s does not make VG_BUILD_DIR absolute"
    done
    echo "PASS"
    ;;
main_job)
    mkdir -p "$work/b/bin"
    printf '#!/bin/sh\nprintf "%%s\\n" "$@" >>"%s/args"\n' "$work" >"$work/b/bin/vg"
    chmod +x "$work/b/bin/vg"
    dev_sh "build='$work/b'; main_job --mode full" >/dev/null || fail "main_job"
    fix=$src/tests/data/qwen2_5_vl_tiny
    grep -qx -- '--expected' "$work/args" || fail "vg vit encode is not given --expected"
    expected=$(grep -A1 -x -- '--expected' "$work/args" | tail -n 1)
    input=$(grep -A1 -x -- '--input' "$work/args" | tail -n 1)
    [ "$expected" = "$fix/two_images.expected.safetensors" ] || fail "--expected $expected"
    [ "$input" = "$fix/two_images.input.safetensors" ] || fail "--input $input"
    [ -f "$expected" ] || fail "$expected does not exist"
    [ "$(tail -n 2 "$work/args" | paste -sd' ')" = "--mode full" ] || fail "extra args not passed last"
    echo "PASS"
    ;;
spdx)
    r=$work/repo
    mkdir -p "$r/sub"
    printf 'int a;\n' >"$r/a.c"
    printf '#!/bin/sh\necho hi\n' >"$r/run.sh" && chmod +x "$r/run.sh"
    printf '#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(1)\n' >"$r/sub/p.py"
    printf 'project(x)\n' >"$r/CMakeLists.txt"
    printf '/* SPDX-License-Identifier: Apache-2.0 */\nint b;\n' >"$r/sub/b.h"
    printf '__global__ void k() {}\n' >"$r/sub/k.cu"
    printf '# readme\n' >"$r/README.md"
    printf 'int untracked;\n' >"$r/untracked.c"
    (cd "$r" && git init -q && git add a.c run.sh sub CMakeLists.txt README.md) || fail "git"
    out=$("$src/scripts/spdx.sh" --check "$r" 2>&1)
    st=$?
    echo "$out"
    [ $st -eq 1 ] || fail "--check exit status $st with files lacking the line"
    for f in a.c run.sh sub/p.py CMakeLists.txt sub/k.cu; do
        grep -qx "$f" <<<"$out" || fail "--check does not list $f"
    done
    grep -q 'b.h\|README\|untracked' <<<"$out" && fail "--check lists a file it should not"
    "$src/scripts/spdx.sh" "$r" || fail "spdx.sh exit status $?"
    [ "$(head -n 1 "$r/a.c")" = "/* SPDX-License-Identifier: Apache-2.0 */" ] || fail "a.c: $(head -n 1 "$r/a.c")"
    [ "$(sed -n 2p "$r/a.c")" = "int a;" ] || fail "a.c lost its content"
    [ "$(head -n 1 "$r/sub/k.cu")" = "/* SPDX-License-Identifier: Apache-2.0 */" ] || fail "k.cu"
    [ "$(head -n 1 "$r/CMakeLists.txt")" = "# SPDX-License-Identifier: Apache-2.0" ] || fail "CMakeLists.txt"
    [ "$(sed -n 1,2p "$r/run.sh" | paste -sd'|')" = "#!/bin/sh|# SPDX-License-Identifier: Apache-2.0" ] || fail "run.sh: $(cat "$r/run.sh")"
    [ -x "$r/run.sh" ] || fail "run.sh lost its executable bit"
    [ "$(sed -n 3p "$r/sub/p.py")" = "# SPDX-License-Identifier: Apache-2.0" ] || fail "p.py: the coding line must stay second"
    [ "$(grep -c SPDX "$r/sub/b.h")" -eq 1 ] || fail "b.h got a second line"
    [ "$(cat "$r/README.md")" = "# readme" ] || fail "README.md changed"
    [ "$(cat "$r/untracked.c")" = "int untracked;" ] || fail "an untracked file changed"
    before=$(cd "$r" && cat a.c run.sh sub/* CMakeLists.txt | md5sum)
    "$src/scripts/spdx.sh" "$r" || fail "second run"
    [ "$(cd "$r" && cat a.c run.sh sub/* CMakeLists.txt | md5sum)" = "$before" ] || fail "not idempotent"
    "$src/scripts/spdx.sh" --check "$r" || fail "--check fails after spdx.sh"
    echo "PASS"
    ;;
spdx_tree)
    git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
    "$src/scripts/spdx.sh" --check "$src" || fail "files without an SPDX line (run scripts/spdx.sh)"
    echo "PASS"
    ;;
*) fail "unknown case $case_" ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# vg developer entry point: installs what the build needs (Debian 12, apt-get), configures,
# builds and runs things. Usage: scripts/dev.sh <command> [args]
#   run        build what the main job runs, then run it on the default backend: vg info, and
#              the tiny Qwen2.5-VL vision encoder on two images, checked against the expected
#              embeddings (extra args go to vg vit encode). It builds the vg command,
#              kunlun_stub and the backends this machine can run: cuda only with an NVIDIA GPU,
#              hip only with an AMD one (/dev/kfd), opencl only with a registered OpenCL driver
#   test       build everything, then the whole test suite (GPU tests SKIP without a GPU), ending
#              with 'vg tests: N passed, M failed, K skipped'; extra args go to ctest. Then, if it
#              passed, the Python package (scripts/python-test.sh: a venv in BUILD_DIR, its own
#              CPU-only build), ending with 'pytest: N passed, M failed, K skipped'
#   ctest      the test suite and its summary in an already-built tree (args go to ctest)
#   build      configure and build, showing the compiler's output
#   gpu-test   build, then the GPU suite (needs a GPU; scripts/gpu-suite.sh: ctest -L gpu,
#              compute-sanitizer memcheck and racecheck, the launch and IPC benchmarks)
#   sanitize   the CPU suite under ASan+UBSan, the threaded tests under TSan
#   fuzz [S]   the libFuzzer targets for S seconds each (default 60)
#   deps       install the build's Debian packages only (deps-fuzz: and clang's, for fuzz)
# The configures of test, build and gpu-test build each backend whose toolchain is present
# (run's only those this machine can run; sanitize, fuzz and the Python package's build leave
# cuda and hip out), whatever an earlier configure cached: cuda when nvcc is on PATH or in
# $CUDA_HOME/bin (default /usr/local/cuda),
# hip when hipcc is on PATH, opencl when CMake finds the OpenCL headers and ICD loader (its
# VG_BUILD_OPENCL=AUTO decides at every configure). run, test and gpu-test keep the compiler's
# output in BUILD_DIR/build.log, show one progress line (a line every 30 s when stderr is not a
# terminal: percent and seconds) and the log's tail if the build fails.
# Environment: VG_BUILD_DIR (default: build; also the base of sanitize's BUILD_DIR-asan and
#              -tsan and fuzz's BUILD_DIR-fuzz), VG_CMAKE_ARGS (extra cmake arguments, applied
#              last: -DVG_BUILD_HIP=OFF there wins), VG_JOBS (parallel build jobs, default:
#              nproc), VG_SKIP_DEPS=1 (no apt-get), CUDA_HOME, VG_KERNEL_LIBS=AUTO|ON|OFF (the
#              CUDA backend's kernel libraries: scripts/fetch-kernel-libs.sh, cmake/VgKernelLibs.cmake).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VG_BUILD_DIR:-$root/build}
[[ $build == /* ]] || build=$PWD/$build # absolute (as given, links kept): the scripts it calls cd
jobs=${VG_JOBS:-$(nproc 2>/dev/null || echo 2)}
cuda_home=${CUDA_HOME:-/usr/local/cuda}

# Debian packages the build needs (the OpenCL headers and ICD loader build the opencl backend,
# PoCL runs it on the CPU; pip fetches the kernel libraries' wheel where nvcc is, and with venv
# the test command installs the Python package); the test command adds ROCm's compiler, so that
# the hip backend is built (and its GPU tests skip) on every machine.
packages=(build-essential cmake pkgconf libcmocka-dev libopenblas-dev libcjson-dev
          ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd python3-pip python3-venv)
test_packages=(hipcc libamdhip64-dev)

say() { echo "dev.sh: $*" >&2; }

deps() {
    [ "${VG_SKIP_DEPS:-0}" = 1 ] && return 0 # dependencies provided another way (offline-deps.sh)
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What this machine can run, for `run` (which builds only that): a GPU of each vendor, an
# OpenCL driver registered with the ICD loader (OCL_ICD_VENDORS: a directory of .icd files or
# one file, as ocl-icd reads it).
nvidia_gpu() { [ -e /dev/nvidia0 ] || nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }
amd_gpu() { [ -e /dev/kfd ]; }
opencl_driver() {
    local d=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    [ -f "$d" ] || compgen -G "$d/*.icd" >/dev/null
}

# The backends whose toolchain is here, as explicit cmake options: an option cached OFF by a
# configure that ran before the toolchain was installed must not keep that backend out. With
# build_scope=usable (run), a backend this machine cannot run is left out, and why goes into
# left_out[backend].
backend_flags=()
build_scope=all
declare -gA left_out=()
backend_toolchains() {
    local nvcc hipcc cuda=OFF hip=OFF opencl=AUTO # CMake looks for OpenCL itself
    nvcc=$(command -v nvcc || true)
    if [ -z "$nvcc" ] && [ -x "$cuda_home/bin/nvcc" ]; then
        export PATH=$cuda_home/bin:$PATH # the CUDA toolkit's default place is outside PATH
        nvcc=$cuda_home/bin/nvcc
    fi
    hipcc=$(command -v hipcc || true)
    [ -n "$nvcc" ] && cuda=ON
    [ -n "$hipcc" ] && hip=ON
    left_out=()
    if [ "$build_scope" = usable ]; then
        if [ $cuda = ON ] && ! nvidia_gpu; then
            cuda=OFF left_out[cuda]="no NVIDIA GPU here; dev.sh test builds it"
        fi
        if [ $hip = ON ] && ! amd_gpu; then
            hip=OFF left_out[hip]="no AMD GPU here; dev.sh test builds it"
        fi
        if ! opencl_driver; then
            opencl=OFF left_out[opencl]="no OpenCL driver registered; dev.sh test builds it"
        fi
    fi
    backend_flags=("-DVG_BUILD_CUDA=$cuda" "-DVG_BUILD_HIP=$hip" "-DVG_BUILD_OPENCL=$opencl")
}

log_tail() {
    echo "---- last lines of $1:" >&2
    tail -n 40 "$1" >&2
    echo "---- full log: $1" >&2
}

# Configure $build; say in one line which backends CMake decided to build, and why one is not.
# backends_built: their names.
backends_built=()
configure() {
    backend_toolchains
    mkdir -p "$build"
    local log=$build/build.log
    # the CUDA backend's kernel libraries (FlashInfer's headers): fetched when the cuda backend is
    # built (nvcc is here and, for run, an NVIDIA GPU) and VG_KERNEL_LIBS is not OFF; a failed
    # fetch (no network) leaves vg's own kernels, as OFF does
    local fetch_err=""
    if [[ " ${backend_flags[*]} " == *" -DVG_BUILD_CUDA=ON "* && " ${VG_CMAKE_ARGS:-} " != *" -DVG_BUILD_CUDA=OFF "* ]] &&
        [ "${VG_KERNEL_LIBS:-AUTO}" != OFF ] &&
        ! fetch_err=$("$root/scripts/fetch-kernel-libs.sh" "$build/_deps/kernel-libs" 2>&1 >/dev/null); then
        fetch_err=$(tail -n 1 <<<"$fetch_err")
        fetch_err=${fetch_err#fetch-kernel-libs: }
    else
        fetch_err=""
    fi
    # shellcheck disable=SC2086
    if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${backend_flags[@]}" \
        "-DVG_KERNEL_LIBS=${VG_KERNEL_LIBS:-AUTO}" ${VG_CMAKE_ARGS:-} >"$log" 2>&1; then
        say "configuring failed"
        log_tail "$log"
        return 1
    fi
    # CMake's own verdict: "-- vg: backends: kunlun_stub=ON cuda=ON hip=OFF opencl=ON; sanitize=''"
    local verdict on=() off=()
    verdict=$(grep -m1 '^-- vg: backends:' "$log" || true)
    for b in kunlun_stub cuda hip opencl; do
        case $verdict in
        *" $b=ON"*) on+=("$b") ;;
        *)
            [ -n "${left_out[$b]:-}" ] && off+=("$b (${left_out[$b]})") && continue
            case $b in
            cuda) command -v nvcc >/dev/null && off+=("cuda (turned off)") || off+=("cuda (no nvcc)") ;;
            hip) command -v hipcc >/dev/null && off+=("hip (turned off)") || off+=("hip (no hipcc)") ;;
            opencl) grep -q '^-- vg: OpenCL not found' "$log" && off+=("opencl (no OpenCL headers or ICD loader)") ||
                off+=("opencl (turned off)") ;;
            *) off+=("$b (turned off)") ;;
            esac
            ;;
        esac
    done
    backends_built=("${on[@]}")
    local line="backends built: ${on[*]:-none}"
    [ ${#off[@]} -gt 0 ] && line+="; not built: $(printf '%s, ' "${off[@]}" | sed 's/, $//')"
    # and which CUDA kernels (CMake's "-- cuda kernels: ..."; a failed fetch says why)
    verdict=$(grep -m1 '^-- cuda kernels:' "$log" || true)
    if [ -n "$verdict" ] && [ -n "$fetch_err" ] && [[ $verdict == *"vg's own"* ]]; then
        verdict="-- cuda kernels: vg's own (kernel libraries not fetched: $fetch_err)"
    fi
    [ -n "$verdict" ] && line+="; ${verdict#-- }"
    say "$line"
}

# Build $build (extra args go to cmake --build, e.g. --target) with the compiler's output in
# build.log. On a terminal, one line with the percent, rewritten; elsewhere (CI, a pipe) the line
# is finished when the build is, and a line with the percent and the seconds is added every
# progress_every seconds meanwhile, so that a long build is never silent.
progress_every=30
quiet_build() {
    local log=$build/build.log start=$SECONDS st ticked
    local where=${build#"$PWD"/} tty=0
    [ -t 2 ] && tty=1
    if [ $tty = 1 ]; then
        printf 'dev.sh: building in %s (log: %s/build.log) ' "$where" "$where" >&2
    else
        printf 'dev.sh: building in %s (log: %s/build.log) ... ' "$where" "$where" >&2
    fi
    set +e
    cmake --build "$build" -j "$jobs" "$@" 2>&1 | {
        # read -t: a compiler silent for minutes (nvcc) must not stop the clock; a line cut by
        # the timeout is kept and finished by the next read
        local line chunk partial="" rc pct=0 last=$SECONDS ticks=0
        while :; do
            chunk=""
            IFS= read -r -t 1 chunk
            rc=$?
            if [ $rc -gt 128 ]; then
                partial+=$chunk
            elif [ $rc -eq 0 ] || [ -n "$partial$chunk" ]; then
                line=$partial$chunk partial=""
                printf '%s\n' "$line" >>"$log"
                if [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then
                    pct=${BASH_REMATCH[1]}
                    [ $tty = 1 ] && printf '\rdev.sh: building in %s (log: %s/build.log) %3d%% ' \
                        "$where" "$where" "$pct" >&2
                fi
            fi
            [ $rc -ne 0 ] && [ $rc -le 128 ] && break # end of the output
            if [ $tty = 0 ] && [ $((SECONDS - last)) -ge "$progress_every" ]; then
                [ $ticks = 0 ] && echo >&2 # finish the first line
                printf 'dev.sh: building: %d%% after %d s\n' "$pct" $((SECONDS - start)) >&2
                last=$SECONDS ticks=$((ticks + 1))
            fi
        done
        [ $ticks = 0 ] # the reader's status: 1 when progress lines were printed
    }
    st=${PIPESTATUS[0]} ticked=${PIPESTATUS[1]}
    set -e
    [ "$ticked" -ne 0 ] && printf 'dev.sh: build ' >&2 # after progress lines: a line of its own
    if [ "$st" -ne 0 ]; then
        echo "failed" >&2
        log_tail "$log"
        return "$st"
    fi
    echo "done, $((SECONDS - start)) s" >&2
}

configure_and_build() {
    deps
    configure
    quiet_build
}

# ctest, its own output kept whole, then one line that counts skips apart from passes.
# The exit status is ctest's.
run_ctest() {
    local log=$build/ctest.log st
    set +e
    (cd "$build" && ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$log"
    st=${PIPESTATUS[0]}
    set -e
    ctest_summary "$log"
    return "$st"
}

# From ctest's closing lines: "NN% tests passed, F tests failed out of T", then the tests that
# did not run ("(Skipped)": exit code 77; "(Disabled)": not counted in T). Failed includes
# "(Not Run)" (a missing executable).
ctest_summary() {
    awk '
        /% tests passed, [0-9]+ tests? failed out of [0-9]+/ {
            for (i = 1; i <= NF; i++) if ($i == "failed") failed = $(i - 2)
            total = $NF; seen = 1; skipped = 0; disabled = 0; next
        }
        seen && /\(Skipped\)[ \t]*$/ { skipped++ }
        seen && /\(Disabled\)[ \t]*$/ { disabled++ }
        END {
            if (!seen) { print "vg tests: ctest gave no summary (see above)"; exit }
            line = sprintf("vg tests: %d passed, %d failed, %d skipped", total - failed - skipped, failed, skipped)
            if (disabled) line = line sprintf(", %d disabled", disabled)
            if (skipped) line = line " (GPU tests skip without a GPU)"
            print line
        }' "$1"
}

# The main job: which backend is in use, then the tiny Qwen2.5-VL vision tower on it, compared
# with the embeddings the reference implementation gave (vg says whether they agree).
main_job() {
    "$build/bin/vg" info
    echo
    local fix=$root/tests/data/qwen2_5_vl_tiny
    "$build/bin/vg" vit encode --model "$fix/model" --input "$fix/two_images.input.safetensors" \
        --expected "$fix/two_images.expected.safetensors" \
        --output "$build/two_images.embeddings.safetensors" --repeat 3 --stats "$@"
}

# Sourced (tests/install/dev_sh_test.sh): the functions only.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

cmd=${1:-}
shift || true
case "$cmd" in
deps) deps ;;
deps-fuzz)
    # the build's packages, and libFuzzer, which comes with clang's runtime (Debian 12: clang 14)
    packages+=(clang libclang-rt-14-dev)
    deps
    ;;
build)
    deps
    configure
    cmake --build "$build" -j "$jobs"
    ;;
run)
    # what the main job runs: the vg command and the backends this machine can use
    build_scope=usable
    deps
    configure
    quiet_build --target vg_cli "${backends_built[@]/#/vg_}"
    main_job "$@"
    ;;
test)
    packages+=("${test_packages[@]}")
    configure_and_build
    run_ctest "$@"
    # then the Python package: pip install ./python (its own CPU-only build of vg), its pytest suite
    VG_BUILD_DIR=$build CMAKE_ARGS="-DVG_BUILD_CUDA=OFF -DVG_BUILD_HIP=OFF ${CMAKE_ARGS:-}" "$root/scripts/python-test.sh"
    ;;
ctest) run_ctest "$@" ;;
gpu-test)
    packages+=("${test_packages[@]}")
    configure_and_build
    "$root/scripts/gpu-suite.sh" "$build"
    ;;
sanitize)
    deps
    "$root/scripts/sanitize.sh"
    ;;
fuzz)
    "$root/scripts/fuzz.sh" "$@"
    ;;
*)
    awk 'NR > 1 && /^# SPDX-License-Identifier:/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the replayed graphs of a command spend their time: the command runs with
# libvg_kernel_trace.so injected (a CUPTI trace of every kernel, tools/trace/kernel_trace.c), and
# tools/trace/trace_summary.py prints, per graph replayed at least N times, the kernels a
# replay, the span, the busy time and each role's time (medians over the replays). Unlike
# profile-lm.sh (Nsight Compute, kernels one at a time), this times the graphs as they replay.
#   scripts/trace-graphs.sh BUILD_DIR [--trace FILE] [--min-replays N] [--json] -- COMMAND [ARG...]
# --trace FILE keeps the raw trace there (a file that must not exist yet); without it the trace
# goes to a temporary file that is removed. Needs an NVIDIA device, the build's
# lib/libvg_kernel_trace.so (built with the cuda backend where the toolkit has CUPTI) and python3.
# One process is traced: the first that initialises CUDA. A process it starts inherits the
# injection, finds the trace file there and runs untraced, saying so (so not `vg lm bench --tp`'s
# ranks).
# The summary alone is on stdout (with --json, one document); the command's own output goes to
# stderr.
# Exit status: the command's when it failed; else the summary's (1: no trace, or no graph
# replayed N times); 2 for a wrong command line.
set -euo pipefail
# FILE's path from /, its folder resolved (the command may change folder before it initialises CUDA)
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
usage() { echo "usage: trace-graphs.sh BUILD_DIR [--trace FILE] [--min-replays N] [--json] -- COMMAND [ARG...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
build=$1; shift
trace= summary_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --trace) [ $# -ge 2 ] || usage; trace=$2; shift 2 ;;
    --min-replays) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; summary_args+=(--min-replays "$2"); shift 2 ;;
    --json) summary_args+=(--json); shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] || usage
lib=$build/lib/libvg_kernel_trace.so
[ -f "$lib" ] || { echo "trace-graphs: $lib not found (built only with the cuda backend, where the CUDA toolkit has CUPTI)" >&2; exit 1; }
lib=$(absolute "$lib")
if [ -z "$trace" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  trace=$tmp/trace.tsv
elif [ -e "$trace" ] || [ -L "$trace" ]; then
  echo "trace-graphs: $trace exists; the trace never overwrites a file" >&2
  exit 2
elif [ ! -d "$(dirname "$trace")" ]; then
  echo "trace-graphs: $(dirname "$trace") is not a folder" >&2
  exit 2
else
  trace=$(absolute "$trace")
fi
status=0
CUDA_INJECTION64_PATH=$lib VG_KERNEL_TRACE=$trace "$@" >&2 || status=$?
if [ "$status" -ne 0 ]; then
  echo "trace-graphs: the command exited $status" >&2
  exit "$status"
fi
if [ ! -s "$trace" ]; then
  echo "trace-graphs: no trace was written: the command initialised no CUDA device, or the library could not start (see above)" >&2
  exit 1
fi
here=$(cd "$(dirname "$0")/.." && pwd)
python3 "$here/tools/trace/trace_summary.py" "$trace" ${summary_args[@]+"${summary_args[@]}"}

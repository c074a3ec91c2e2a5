#!/usr/bin/env bash
# A kernel and NVTX-phase profile of any CUDA program, where Nsight Systems
# is not installed (CUPTI comes with the CUDA toolkit):
#
#   scripts/kernel_trace.sh OUTDIR COMMAND [ARGS...]
#   e.g. scripts/kernel_trace.sh build/trace mpirun -np 2 build/examples/mlp_train_dp --epochs 2
#
# Builds scripts/kernel_trace.c into build/kernel_trace/ (gcc and CUPTI's
# headers and library under CUDA_HOME, /usr/local/cuda by default), runs
# COMMAND with it loaded into every process (CUDA_INJECTION64_PATH, and
# NVTX_INJECTION64_PATH for the NVTX ranges; Open MPI's local ranks inherit
# them), then sums the records with scripts/kernel_trace.py into
# OUTDIR/kernel_trace_kernels.csv and OUTDIR/kernel_trace_phases.csv (and
# OUTDIR/kernel_trace.context: date, commit, GPU, command). OUTDIR keeps each
# process's raw trace.<pid>.csv, to sum again (scripts/kernel_trace.py OUTDIR
# --skip RANGE leaves a range's kernels out); COMMAND's exit status is the
# script's.
set -u -o pipefail
[ $# -ge 2 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1; shift
cuda=${CUDA_HOME:-/usr/local/cuda}
lib=$root/build/kernel_trace/libkernel_trace.so
mkdir -p "$out" "$(dirname "$lib")"
rm -f "$out"/trace.*.csv
if [ ! -f "$lib" ] || [ "$root/scripts/kernel_trace.c" -nt "$lib" ]; then
    gcc -shared -fPIC -O2 -std=c11 -Wall -Wextra -I"$cuda/include" "$root/scripts/kernel_trace.c" \
        -L"$cuda/lib64" -lcupti -Wl,-rpath,"$cuda/lib64" -o "$lib" || exit 1
fi
cupti=$(ldd "$lib" | awk '/libcupti/ {print $3}')
[ -n "$cupti" ] || { echo "kernel_trace.sh: the CUPTI library is not found (CUDA_HOME=$cuda)" >&2; exit 1; }
TRACE_DIR=$(cd "$out" && pwd) CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$cupti "$@"
status=$?
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: ${HPDL_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null)}"
    echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, -)"
    echo "command: $*"
} > "$out/kernel_trace.context"
python3 "$root/scripts/kernel_trace.py" "$out" --csv "$out/kernel_trace" || exit 1
exit $status

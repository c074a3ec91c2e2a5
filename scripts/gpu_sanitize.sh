#!/usr/bin/env bash
# Runs every GPU test binary (build/gpu/gpu_*, from tests/gpu_*.cu) under
# compute-sanitizer on the GPU machine: memcheck over all its tests, then
# racecheck and synccheck over a representative subset. One log per binary
# and tool under $OUT (default build/sanitize), a table of binary, tool,
# errors and seconds, and the suite's closing line; a binary+tool passes when
# the sanitizer reports 0 errors (the tests' own verdict is in the table too).
#   device tool:  scripts/gpu_sanitize.sh
#                 TOOLS=memcheck scripts/gpu_sanitize.sh gpu_gemm gpu_mlp
#
# Sizes: every test is small except the one-thread vector add (1M elements on
# one GPU thread: minutes under memcheck), which HPDL_TEST_SMALL=1 cuts to
# 257 elements. Racecheck is 10-100x slower than memcheck, so racecheck and
# synccheck run only the tests named in RACE_FILTERS below (the harness runs
# the tests whose names contain its argument): those with the kernels that
# share memory (GEMM tiles, convolution, softmax, int8 GEMM, reductions).
# On a host with several GPUs, gpu_mpi_ipc restarts itself under mpirun;
# compute-sanitizer follows the child processes (--target-processes all).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-build/sanitize}
TOOLS=${TOOLS:-memcheck racecheck synccheck}
LIMIT=${LIMIT:-1200} # seconds per run
export HPDL_TEST_SMALL=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service

# Test-name filters for racecheck and synccheck, one run per word; "" = all.
declare -A RACE_FILTERS=(
    [gpu_checks]=""
    [gpu_cnn]="every_kind small_cnn"
    [gpu_conv]="conv_f32 layers_f16"
    [gpu_gemm]="gemm_f32 gemm_f16 hopper_small"
    [gpu_matpow]="f64_powers"
    [gpu_mlp]="softmax_xent_f32 agreement_f32"
    [gpu_model_parallel]="single_device"
    [gpu_mpi_ipc]="exact_sums_f32"
    [gpu_mpi_tp]="matches_cpu_driver"
    [gpu_optim]=""
    [gpu_quant]="gemm_i8_exact gemm_requant_exact"
    [gpu_vecadd]="vecadd_f16"
)

mkdir -p "$OUT"
SANITIZER=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" 2>/dev/null)
if [ -z "$SANITIZER" ]; then echo "gpu_sanitize: no compute-sanitizer (CUDA Toolkit's bin/)"; exit 1; fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_sanitize: no CUDA GPU (or no driver): nothing sanitized"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$SANITIZER" --version | tail -n 1

if [ $# -gt 0 ]; then names=("$@")
else names=(); for f in tests/gpu_*.cu; do names+=("$(basename "$f" .cu)"); done; fi
echo "== build: ${names[*]}"
make --no-print-directory -j"$(nproc)" "${names[@]/#/build/gpu/}" > "$OUT/build.log" 2>&1 ||
    { tail -n 30 "$OUT/build.log"; exit 1; }

# run_tool BINARY TOOL LOG: the binary under the tool, once per filter word
# (racecheck, synccheck) or once over all tests (memcheck), into LOG.
# NCCL's communicator setup asks cudaFuncGetAttributes about kernels it has
# no image for on this GPU and handles the error itself (2 x H200, NCCL
# 2.28: 8 reports of cudaErrorNoKernelImageForDevice from ncclCommInitRank
# in gpu_mpi_ipc, no memory errors): the binaries that reach NCCL run with
# API-error reports off. hpdl checks every API call it makes itself.
run_tool() {
    local name=$1 tool=$2 log=$3 filter filters api=()
    filters=("")
    case $name in gpu_mpi_ipc | gpu_mpi_tp) api=(--report-api-errors no) ;; esac
    if [ "$tool" != memcheck ] && [ -n "${RACE_FILTERS[$name]:-}" ]; then read -r -a filters <<< "${RACE_FILTERS[$name]}"; fi
    for filter in "${filters[@]}"; do
        echo "=== $tool build/gpu/$name ${filter:-(all tests)}"
        timeout "$LIMIT" "$SANITIZER" --tool "$tool" --target-processes all "${api[@]}" "build/gpu/$name" ${filter:+"$filter"} 2>&1
        echo "=== exit $?"
    done > "$log"
    echo "${#filters[@]}"
}

# errors LOG RUNS: the errors the sanitizer reported over RUNS runs, or "?"
# when a run ended without its summary (a crash or the time limit). Each
# process ends with "ERROR SUMMARY: N errors"; racecheck may instead say
# "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
errors() {
    local log=$1 runs=$2 pattern
    for pattern in 'ERROR SUMMARY: [0-9]+ error' 'RACECHECK SUMMARY: .*\([0-9]+ error'; do
        if [ "$(grep -c -E "$pattern" "$log")" -ge "$runs" ]; then
            grep -o -E "$pattern" "$log" | grep -o -E '[0-9]+ error' | awk '{ n += $1 } END { print n + 0 }'
            return
        fi
    done
    echo "?"
}

passed=0 failed=0 rows=()
for name in "${names[@]}"; do
    for tool in $TOOLS; do
        log="$OUT/$name.$tool.log" start=$SECONDS
        echo "-- $name under $tool"
        runs=$(run_tool "$name" "$tool" "$log")
        n=$(errors "$log" "$runs")
        verdict=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" |
            awk '{ p += $1; f += $3; s += $5 } END { printf "%d/%d/%d", p, f, s }')
        if [ "$n" = 0 ]; then passed=$((passed + 1)) mark=ok; else failed=$((failed + 1)) mark=FAIL; fi
        rows+=("$(printf '%-4s %-20s %-10s %6s %7d   %s' "$mark" "$name" "$tool" "$n" $((SECONDS - start)) "$verdict")")
    done
done

{
    printf '%-4s %-20s %-10s %6s %7s   %s\n' "" binary tool errors seconds "tests passed/failed/skipped"
    printf '%s\n' "${rows[@]}"
} | tee "$OUT/summary.txt"
echo "logs: $OUT/<binary>.<tool>.log"
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]

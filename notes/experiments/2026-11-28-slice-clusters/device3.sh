#!/usr/bin/env bash
# A GEMM inside a graph capture (capture_repro.cu): the build of 5a7eaa1's header (repro_old) and
# the build after the probe's change (repro_new), each as the program's first GEMM and after a
# warm-up product on the default stream; then gpu_gemm.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-slice-clusters/device3.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
exec > >(tee "$OUT/device3.log") 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader
for v in old new; do
    for w in "" warm; do
        echo "-- repro_$v $w"; timeout 60 build/exp/repro_$v $w; echo "rc $?"
    done
done
timeout 200 build/gpu/gpu_gemm > "$OUT/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"
grep -E "split|passed" "$OUT/gpu_gemm.log"

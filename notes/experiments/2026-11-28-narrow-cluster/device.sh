#!/usr/bin/env bash
# The narrow products of few rows in a cluster (hpdl__gemm_narrow_cluster): gpu_gemm and gpu_mlp
# at the change; bench/gemm --mlp against the build without it (build/exp/gemm_prev, built with
# -DHPDL__NCL_MAX_M=0) in turns (f16 and f32 twice, bf16 once); the step in a graph
# (notes/experiments/2026-11-28-step-overhead/probe_step.cu) before and after; bench/mlp after
# (without PyTorch: python3 off the PATH). Logs and CSVs tarred.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-narrow-cluster/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
W=$OUT/w
mkdir -p "$W"
exec > >(tee "$W/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
step gpu_gemm
timeout 200 build/gpu/gpu_gemm > "$W/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"; grep -E "narrow_cluster|passed" "$W/gpu_gemm.log"
step gpu_mlp
timeout 200 build/gpu/gpu_mlp > "$W/gpu_mlp.log" 2>&1; echo "gpu_mlp rc $?"; tail -1 "$W/gpu_mlp.log"
for run in 1f16 1f32 1bf16 2f16 2f32; do
    r=${run:0:1}; p=${run:1}
    for v in prev new; do
        bin=build/bench/gemm; [ $v = prev ] && bin=build/exp/gemm_prev
        d=$W/$v$r$p
        mkdir -p "$d"
        timeout 120 $bin --mlp --precision $p --output "$d" > "$d/gemm.log" 2>&1 || echo "gemm $v$r$p failed"
        grep -E "geomean" "$d/gemm_mlp.csv" | grep -E "auto|best" | cut -d, -f1-2 | sed "s/^/$v$r /"
        grep -E "_fwd_l1_auto" "$d/gemm_mlp_all.csv" | cut -d, -f1,2,5,6 | sed "s/^/$v$r /"
    done
done
step "step graphs"
for c in "f16 2048 32" "f16 2048 128" "f16 2048 512" "f16 512 32" "f16 512 128" "f32 2048 32" "f32 2048 128" "f32 512 128"; do
    for v in prev new; do
        bin=build/exp/probe_step; [ $v = prev ] && bin=build/exp/probe_step_prev
        echo "-- $v $c"; timeout 60 $bin $c | grep -E "^(cublas|own)"
    done
done > "$W/probe_step.log" 2>&1
cat "$W/probe_step.log"
step "bench/mlp"
timeout 300 env PATH=/nonexistent build/bench/mlp --output "$W/mlp" > "$W/mlp.log" 2>&1; echo "mlp rc $?"
cat "$W/mlp/mlp_detail.csv" 2>/dev/null
step done
(cd "$OUT" && tar czf runs.tgz w && rm -rf w)

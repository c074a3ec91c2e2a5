#!/usr/bin/env bash
# The one-tile Hopper rung's slices of K as one cluster adding through shared memory
# (hpdl__wg_add_slices_in_cluster): gpu_gemm (the split test says which way it went) and gpu_mlp
# at the change, racecheck on the split test; bench/gemm --mlp against the build without it
# (build/exp/gemm_prev, -DHPDL__WG_SLICE_CLUSTERS=0) in turns (f16 twice, bf16 once); the step
# in a graph (notes/experiments/2026-11-28-step-overhead/probe_step.cu) before and after at the
# shapes that split; bench/mlp after, without PyTorch. Logs and CSVs tarred.
#   from the repository root, on one GPU:  OUT=<dir> notes/experiments/2026-11-28-slice-clusters/device.sh
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
W=$OUT/w
mkdir -p "$W"
exec > >(tee "$W/device.log") 2>&1
start=$SECONDS
step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
step gpu_gemm
timeout 200 build/gpu/gpu_gemm > "$W/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"
grep -E "split_k|784 x 256|narrow_cluster|passed" "$W/gpu_gemm.log"
step racecheck
timeout 200 compute-sanitizer --tool racecheck build/gpu/gpu_gemm test_gemm_hopper_split_k > "$W/racecheck.log" 2>&1
echo "racecheck rc $?"; tail -3 "$W/racecheck.log"
step gpu_mlp
timeout 200 build/gpu/gpu_mlp > "$W/gpu_mlp.log" 2>&1; echo "gpu_mlp rc $?"; tail -1 "$W/gpu_mlp.log"
for run in 1f16 1bf16 2f16; do
    r=${run:0:1}; p=${run:1}
    for v in prev new; do
        bin=build/bench/gemm; [ $v = prev ] && bin=build/exp/gemm_prev
        d=$W/$v$r$p
        mkdir -p "$d"
        timeout 120 $bin --mlp --precision $p --output "$d" > "$d/gemm.log" 2>&1 || echo "gemm $v$r$p failed"
        grep -E "geomean" "$d/gemm_mlp.csv" | grep -E "auto|best" | cut -d, -f1-2 | sed "s/^/$v$r /"
        grep -E "_b3000_dw_l0_(auto|wgmma)," "$d/gemm_mlp_all.csv" | cut -d, -f1,2,5,6 | sed "s/^/$v$r /"
    done
done
step "step graphs"
for c in "f16 512 3000" "f16 2048 3000" "f16 512 512"; do
    for r in 1 2; do
        for v in prev new; do
            bin=build/exp/probe_step; [ $v = prev ] && bin=build/exp/probe_step_prev
            echo "-- $v$r $c"; timeout 60 $bin $c | grep -E "^(cublas|own)"
        done
    done
done > "$W/probe_step.log" 2>&1
cat "$W/probe_step.log"
step "bench/mlp"
timeout 300 env PATH=/nonexistent build/bench/mlp --output "$W/mlp" > "$W/mlp.log" 2>&1; echo "mlp rc $?"
cat "$W/mlp/mlp_detail.csv" 2>/dev/null
step done
(cd "$OUT" && tar czf runs.tgz w && rm -rf w)

#!/usr/bin/env bash
# At the commit (hpdl__tf32x3_small_tiles): gpu_gemm and gpu_mlp; bench/gemm --mlp f32 against
# the build before (build/exp/gemm_c975, c97515c) in turns, two rounds; then the committed run:
# bench/gemm --mlp (f32, f16, bf16) and bench/mlp into res/. Everything tarred.
set -u -o pipefail
OUT=${OUT:?set OUT to the output folder}
export HPDL_COMMIT=$(cat .commit)
mkdir -p "$OUT/w/res"
exec > >(tee "$OUT/w/device.log") 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 build/gpu/gpu_gemm > "$OUT/w/gpu_gemm.log" 2>&1; echo "gpu_gemm rc $?"; tail -1 "$OUT/w/gpu_gemm.log"
timeout 200 build/gpu/gpu_mlp > "$OUT/w/gpu_mlp.log" 2>&1; echo "gpu_mlp rc $?"; tail -1 "$OUT/w/gpu_mlp.log"
for r in 1 2; do
    for v in prev new; do
        bin=build/bench/gemm; [ $v = prev ] && bin=build/exp/gemm_c975
        mkdir -p "$OUT/w/$v$r"
        timeout 120 $bin --mlp --precision f32 --output "$OUT/w/$v$r" > "$OUT/w/$v$r/gemm.log" 2>&1 || echo "gemm $v$r failed"
        grep -E "geomean" "$OUT/w/$v$r/gemm_mlp.csv" | sed "s/^/$v$r /"
    done
done
timeout 200 build/bench/gemm --mlp --output "$OUT/w/res" > "$OUT/w/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean" "$OUT/w/res/gemm_mlp.csv"
timeout 300 build/bench/mlp --output "$OUT/w/res" > "$OUT/w/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/w/res/mlp_detail.csv"
cd "$OUT" && tar czf runs.tgz w && rm -rf w

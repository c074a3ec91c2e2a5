#!/usr/bin/env bash
# The committed run on one H200 with the binaries of .commit: bench/gemm --mlp (f32, f16,
# bf16) and bench/mlp (with PyTorch) into res/. Tarred.
set -u -o pipefail
export HPDL_COMMIT=$(cat .commit)
B=build/h90
OUT0=$OUT; OUT=$OUT/w
mkdir -p "$OUT/res"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 150 $B/bench/gemm --mlp --output "$OUT/res" > "$OUT/gemm_mlp.log" 2>&1; echo "gemm --mlp rc $?"
grep -E "geomean_(auto|best)" "$OUT/res/gemm_mlp.csv"
timeout 280 $B/bench/mlp --output "$OUT/res" > "$OUT/mlp.log" 2>&1; echo "mlp rc $?"
cat "$OUT/res/mlp_detail.csv" 2>/dev/null | head -40
cd "$OUT0" && tar czf runs.tgz w && rm -rf w

#!/usr/bin/env bash
# Builds and runs the data-parallel example (2 ranks, 2 epochs) and bench/dp_scaling on the 2-GPU
# machine, logs/CSVs/charts under $OUT. Whole script bounded to ~7 minutes.
#   device tool, kind nvidia-h200-x2:  scripts/gpu_dp.sh
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
NP=${NP:-2}
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_dp.log") 2>&1
start=$SECONDS
nvidia-smi --query-gpu=index,name --format=csv,noheader
command -v mpirun >/dev/null || { echo "gpu_dp: mpirun missing"; exit 1; }
echo "== build"
make --no-print-directory data >/dev/null 2>&1 || scripts/data.sh data/fashion-mnist
timeout 200 make --no-print-directory -j2 build/examples/mlp_train_dp build/bench/dp_scaling || exit 1
echo "== build done in $((SECONDS - start)) s"
MPI="mpirun --allow-run-as-root --bind-to none -np $NP -x NCCL_NVLS_ENABLE -x HPDL_RESULTS"
echo "== example: overlap (bucket) then plain nccl"
timeout 45 $MPI build/examples/mlp_train_dp --hidden 512 --batch 128 --epochs 2 --algo bucket
timeout 45 $MPI build/examples/mlp_train_dp --hidden 2048 --batch 512 --epochs 2 --algo nccl --no-check
left=$((400 - (SECONDS - start))); [ $left -lt 60 ] && left=60
echo "== bench (limit ${left} s)"
HPDL_RESULTS="$OUT" timeout $left $MPI build/bench/dp_scaling
rc=$?
if command -v gnuplot >/dev/null && [ -f "$OUT/dp_scaling_all.csv" ]; then
    gnuplot -e "dir='$OUT'" bench/plots/dp_scaling.gp && echo "charts: $OUT/dp_scaling_eff.png $OUT/dp_scaling_time.png"
fi
for f in dp_scaling.csv dp_scaling_acc.csv; do [ -f "$OUT/$f" ] && { echo "== $f"; cat "$OUT/$f"; }; done
echo "== total $((SECONDS - start)) s"
exit $rc

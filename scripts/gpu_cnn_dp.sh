#!/usr/bin/env bash
# Builds bench/cnn_dp and runs it on a machine with 2 GPUs under mpirun, one rank per GPU: first
# 1 rank (the one-GPU path: small CNN, no PyTorch; CSVs in DIR/np1), then 2 ranks (validation, then
# the small CNN and ResNet-18 at batch 32 and 128 per GPU, 1 GPU against 2, against PyTorch DDP in
# the same run; CSVs in DIR). Log: DIR/gpu_cnn_dp.log. Whole script bounded to ~7.5 minutes.
#   device tool, kind nvidia-h100-x2 (or nvidia-h200-x2):  scripts/gpu_cnn_dp.sh "$OUT"
#   DIR: the first argument, else $OUT, else bench/results/gpu; NP=<ranks> overrides 2.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off: it can take a shared host's GPUs out of service
NP=${NP:-2}
DIR=${1:-${OUT:-bench/results/gpu}}
mkdir -p "$DIR/np1" || exit 1
exec > >(tee "$DIR/gpu_cnn_dp.log") 2>&1
start=$SECONDS
left() { echo $((450 - (SECONDS - start))); }
nvidia-smi --query-gpu=index,name --format=csv,noheader
command -v mpirun >/dev/null || { echo "gpu_cnn_dp: mpirun missing"; exit 1; }
python3 -c "import torch; print('torch', torch.__version__, 'GPUs', torch.cuda.device_count())" 2>&1 | tail -n 1
echo "== build"
timeout 300 make --no-print-directory build/bench/cnn_dp || exit 1
echo "== build done in $((SECONDS - start)) s"
MPI="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
if [ "$(left)" -gt 240 ]; then
    echo "== 1 rank: small CNN, hpdl only"
    timeout 90 $MPI -np 1 build/bench/cnn_dp small --no-torch --output "$DIR/np1"
else
    echo "== 1 rank: skipped, $(left) s left"
fi
limit=$(left); [ "$limit" -lt 150 ] && limit=150
echo "== $NP ranks (limit $limit s)"
timeout "$limit" $MPI -np "$NP" build/bench/cnn_dp --output "$DIR"
rc=$?
for f in np1/cnn_dp.csv cnn_dp.csv cnn_dp_all.csv; do [ -f "$DIR/$f" ] && { echo "== $f"; cat "$DIR/$f"; }; done
echo "== total $((SECONDS - start)) s"
exit $rc

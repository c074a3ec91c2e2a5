#!/usr/bin/env bash
# bench/dp_scaling with its PyTorch DDP anchor and the course's roofline CSVs, on a machine with TWO
# GPUs (kind nvidia-h200-x2), from the repository root, < 9 minutes:
#   1. build bench/dp_scaling and examples/mlp_train_dp (sm_90a there, make -j16, in parallel)
#   2. mpirun -np 2 build/bench/dp_scaling: validation, then H 2048 and 512 at every batch, with
#      bench/pytorch/mlp_ddp.py (H 2048, b 512 and 3000) started by rank 0 first; writes
#      dp_scaling{,_all,_acc}.csv, dp_roofline_rates.csv, dp_roofline_points.csv
#   3. the same with --focus, one overlap setting (p4h c8 q1) beside no overlap and v1, and the
#      PyTorch row: focus/dp_scaling_focus.csv
#   4. mlp_train_dp, one epoch at H 2048, b 512: its roofline line with the corrected AI
# Needs Fashion-MNIST: data/fashion-mnist, or its four .gz files in .gz/, or Debian's package.
# The machine has no .git: give the commit, HPDL_COMMIT=<short hash> bash notes/.../device.sh.
# Output, 2 files: $OUT/device.log (everything, CSVs included) and $OUT/results.tar.gz (the folder
# <gpu>-x2/ with the CSVs, their .context files and dp_scaling.log, for bench/results/<gpu>-x2/).
set -u
OUT=${OUT:-/tmp/dp-anchor-out}
mkdir -p "$OUT" || exit 1
exec > >(tee "$OUT/device.log") 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink multicast stays off, in NCCL, PyTorch and NVSHMEM alike
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HPDL_COMMIT=${HPDL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
start=$SECONDS
stamp() { echo "== $1 ($((SECONDS - start)) s)"; }
# run SECONDS CMD...: CMD under timeout, never past 520 s from the start
run() {
    local left=$((520 - (SECONDS - start)))
    [ "$left" -lt 10 ] && { echo "skipped: no time left"; return 124; }
    timeout $(($1 < left ? $1 : left)) "${@:2}"
}
# --bind-to none: rank 0's python (and its DDP processes) must not inherit a one-core binding
MPI="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST
     -x NVSHMEM_DISABLE_NVLS -x HPDL_RESULTS -x HPDL_COMMIT"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
gpus=$(nvidia-smi --list-gpus | grep -c '^GPU')
[ "$gpus" -ge 2 ] || { echo "device.sh: needs two GPUs, found $gpus"; exit 1; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')-x2
work=$(mktemp -d)
DIR=$work/$slug
mkdir -p "$DIR/focus"
python3 -c 'import torch; print("torch", torch.__version__, "sees", torch.cuda.device_count(), "GPUs")' ||
    echo "no torch: the PyTorch rows will be left out"

stamp "data"
if [ ! -s data/fashion-mnist/t10k-labels-idx1-ubyte ]; then
    if [ -d .gz ]; then MNIST_DIR=.gz scripts/data.sh data/fashion-mnist; else scripts/data.sh data/fashion-mnist; fi ||
        { echo "device.sh: no Fashion-MNIST (carry data/ or .gz/)"; exit 1; }
fi

stamp "build"
run 300 make -j16 --no-print-directory build/bench/dp_scaling build/examples/mlp_train_dp || { stamp "build failed"; exit 1; }

stamp "2. dp_scaling: tables, PyTorch DDP anchor, roofline"
HPDL_RESULTS=$DIR run 200 $MPI build/bench/dp_scaling 2>&1 | tee "$DIR/dp_scaling.log"

stamp "3. dp_scaling --focus (one overlap setting) with the PyTorch row"
HPDL_RESULTS=$DIR/focus run 90 $MPI build/bench/dp_scaling --focus --pieces 4 --halve 1 --ctas 8 --prio 1 --reps 5 \
    2>&1 | tail -n 16

stamp "4. mlp_train_dp, H 2048, b 512, one epoch"
run 40 $MPI build/examples/mlp_train_dp --hidden 2048 --batch 512 --epochs 1 --no-check 2>&1

stamp "results"
for f in "$DIR"/*.csv "$DIR"/focus/*.csv; do [ -f "$f" ] && { echo "-- ${f#$DIR/}"; cat "$f"; }; done
tar -czf "$OUT/results.tar.gz" -C "$work" "$slug"
rm -rf "$work"
stamp "done"

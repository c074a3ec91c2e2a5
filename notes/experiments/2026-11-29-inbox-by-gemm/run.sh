#!/usr/bin/env bash
# Two H200s. The data-parallel step with the first layer's packs left in the
# inbox for the next step's GEMM to empty (A, b2ba808), then also with the
# fused kernel's block shares aligned to 128 bytes (B, 9e93f60), against
# the code before (0, 982ea1f): gpu_mpi_dp on two ranks (B; the fused case
# again under memcheck), the short focus rows 0, A, B in turns, three
# rounds, then B's committed run (every setting, PyTorch DDP first).
# Binaries built on the host for sm_90a, carried as xz with the
# Fashion-MNIST files (xz) in build/c6. Each phase is packed as it ends.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
C=build/c6; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp (B)"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $W/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $W/r/gpu_mpi_dp.log
tail -n 2 $W/r/gpu_mpi_dp.log
step "memcheck, the fused case"
timeout 150 $MPIRUN -np 2 compute-sanitizer --tool memcheck $B/gpu_mpi_dp test_fused > $W/r/memcheck.log 2>&1
echo "rc=$?" >> $W/r/memcheck.log; grep -i "error summary\|passed\|rc=" $W/r/memcheck.log
pack r
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3; do for v in 0 A B; do
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv
done; done; pack ab
step "focus B, every setting, PyTorch DDP first"; mkdir -p $W/focus
timeout 300 $MPIRUN -np 2 $B/dpB --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
step done; pack r

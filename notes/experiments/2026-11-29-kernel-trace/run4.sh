#!/usr/bin/env bash
# Two H200s, the code of e1af273: gpu_mpi_dp on two ranks, its fused case
# under memcheck, then the committed run (every setting, PyTorch DDP first),
# then three short focus runs for the spread of E. Binaries built on the
# host for sm_90a, carried as xz with the Fashion-MNIST files (xz) in
# build/c23.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HPDL_COMMIT=e1af273
C=build/c23; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $W/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $W/r/gpu_mpi_dp.log
tail -n 2 $W/r/gpu_mpi_dp.log
step "memcheck, the fused case"
timeout 150 $MPIRUN -np 2 compute-sanitizer --tool memcheck $B/gpu_mpi_dp test_fused > $W/r/memcheck.log 2>&1
echo "rc=$?" >> $W/r/memcheck.log; grep -i "error summary\|passed\|rc=" $W/r/memcheck.log; pack r
step "focus, every setting, PyTorch DDP first"; mkdir -p $W/focus
timeout 300 $MPIRUN -np 2 $B/dpT --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3; do
  d=$W/short/$round; mkdir -p $d; step "short focus $round"
  timeout 60 $MPIRUN -np 2 $B/dpT $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; pack short
step done; pack r

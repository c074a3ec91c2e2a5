#!/usr/bin/env bash
# Two H200s. After the fused kernel's aligned shares (C, e1e48cc):
#   E1  the mirrored dW0 GEMM stores C from its staged tile in 16-byte
#       pieces, beside its posts, not from the accumulators in 4-byte ones;
#   E2  E1 and the fused kernel on every SM (132 blocks, not the IPC
#       context's 128).
# gpu_mpi_dp on two ranks (E2), the short focus rows C, E1, E2 in turns, four rounds, then the
# committed run (every setting, PyTorch DDP first) of the variant with the
# shortest mean 2-GPU epoch at 512. Binaries built on the host for sm_90a,
# carried as xz with the Fashion-MNIST files (xz) in build/c9.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
declare -A COMMITS=([C]=e1e48cc [E1]=5e52d23 [E2]=819d846)
C=build/c9; B=$C/x; W=/tmp/w; mkdir -p $B $W/r
exec > >(tee "$W/r/device.log") 2>&1
export HPDL_COMMIT=${COMMITS[C]}
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
pack() { tar czf $OUT/$1.tgz -C $W $1; }
for f in $C/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp (E2)"
timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $W/r/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $W/r/gpu_mpi_dp.log
tail -n 2 $W/r/gpu_mpi_dp.log; pack r
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in 1 2 3 4; do for v in C E1 E2; do
  d=$W/ab/$v$round; mkdir -p $d; step "dp$v round $round"; export HPDL_COMMIT=${COMMITS[$v]}
  timeout 60 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048" $d/dp_scaling_focus.csv | cut -d, -f3,11,12,17
done; done; pack ab
best=$(for v in C E1 E2; do cat $W/ab/$v?/dp_scaling_focus.csv | awk -F, -v v=$v '$1=="no overlap" && $3==512 {s+=$12; n++} END {printf "%s %.4f\n", v, s/n}'; done | sort -k2 -n | tee $W/r/means.txt | head -1 | cut -d' ' -f1)
cat $W/r/means.txt
export HPDL_COMMIT=${COMMITS[$best]}
step "focus $best ($HPDL_COMMIT), every setting, PyTorch DDP first"; mkdir -p $W/focus; echo $best > $W/focus/variant
timeout 300 $MPIRUN -np 2 $B/dp$best --focus --algo ipc --reps 10 --data data/fashion-mnist --output $W/focus \
  > $W/focus/dp_scaling.log 2>&1; echo "rc=$?" >> $W/focus/dp_scaling.log
grep "^no overlap,\|^pytorch" $W/focus/dp_scaling_focus.csv; pack focus
step done; pack r

#!/usr/bin/env bash
# Two H200s: gpu_mpi_dp (build C), then the focus rows from builds A (the tree as it is), B (dW0 before
# dW1) and C (B + inboxes emptied by a copy engine) in turns, then the best of B and C again
# with PyTorch DDP in the same run.
set -u -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export HPDL_COMMIT=${COMMIT}
B=build/h90/x; O=$OUT/r; mkdir -p $O $B
exec > >(tee "$O/device.log") 2>&1
MPIRUN="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE -x HPDL_COMMIT"
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
# Binaries built on the host (make B=build/h90 GPU_CC=90 build/h90/bench/dp_scaling on each tree,
# gpu_mpi_dp from C), gzipped; the data travels as xz and is unpacked to raw IDX files.
C=build/carry3
for f in dpA dpB dpC gpu_mpi_dp; do gunzip -c $C/bin/$f.gz > $B/$f; chmod +x $B/$f; done
mkdir -p .raw; for f in $C/data/*.xz; do xz -dc $f > .raw/$(basename $f .xz); done
MNIST_DIR=.raw scripts/data.sh data/fashion-mnist >/dev/null || echo "no Fashion-MNIST"
step "gpu_mpi_dp"; timeout 120 $MPIRUN -np 2 $B/gpu_mpi_dp > $O/gpu_mpi_dp.log 2>&1; echo "rc=$?" >> $O/gpu_mpi_dp.log; tail -n 3 $O/gpu_mpi_dp.log
short="--focus --algo ipc --reps 10 --pieces 1 --halve 0 --ctas 0 --prio 0 --no-torch"
for round in ${ROUNDS:-1 2}; do for v in ${VARIANTS:-A B C}; do
  d=$OUT/ab/$v$round; mkdir -p $d; step "dp$v round $round"
  timeout 200 $MPIRUN -np 2 $B/dp$v $short --data data/fashion-mnist --output $d > $d/dp_scaling.log 2>&1
  echo "rc=$?" >> $d/dp_scaling.log; grep "^no overlap,2048,512" $d/dp_scaling_focus.csv
done; done
best=$(for v in B C; do cat $OUT/ab/$v*/dp_scaling_focus.csv 2>/dev/null | awk -F, -v v=$v '$1=="no overlap" && $3==512 {s+=$17; n++} END {if (n) print s/n, v}'; done | sort -rn | head -n 1 | cut -d" " -f2)
echo "best: ${best:-none}"
if [ -n "$best" ] && [ "${FINAL:-1}" = 1 ]; then
  mkdir -p $OUT/final; step "dp$best with PyTorch DDP"
  timeout 300 $MPIRUN -np 2 $B/dp$best ${short% --no-torch} --data data/fashion-mnist --output $OUT/final > $OUT/final/dp_scaling.log 2>&1
  echo "rc=$?" >> $OUT/final/dp_scaling.log; grep "^no overlap,\|^pytorch" $OUT/final/dp_scaling_focus.csv
fi
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/

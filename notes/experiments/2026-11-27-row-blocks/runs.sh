#!/usr/bin/env bash
# The commands of runs 2 and 3 and of the probe (two H200s, from the repository root with the
# row-block change applied: git apply notes/experiments/2026-11-27-row-blocks/row_blocks.diff).
# Run 1 is device.sh (it also ran gpu_gemm at f8ddadb: 25/25).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE"
OUT=${OUT:?set OUT}
MNIST_DIR=.gz scripts/data.sh data/fashion-mnist >/dev/null
F="--focus --algo ipc --pieces 1 --halve 0 --ctas 8 --prio 1 --reps 10 --no-torch --data data/fashion-mnist"
MPI="-DHPDL_HAVE_MPI $(mpicc --showme:compile) $(mpicc --showme:link | sed 's/\(-[lLW][^ ]*\)/-Xlinker \1/g')"
NV="nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a"
LIBS="-lcublas -lcublasLt -ldl -lnccl -Xlinker -rpath=/usr/local/cuda/lib64"
mkdir -p build/exp
# run 2 (the update kernel's loop over ranks unrolled) used build/bench/dp_scaling alone;
# run 3 builds one binary per forward rule
$NV notes/experiments/2026-11-27-row-blocks/gpu_mpi_dp_row_blocks.cu -Itests -o build/exp/gpu_mpi_dp $LIBS $MPI &
for v in 1024 0 100000; do $NV -DHPDL__DP_SPLIT_MAX_ROWS=$v bench/dp_scaling.cu -o build/exp/dp_$v $LIBS $MPI & done
wait
$M -np 2 build/exp/gpu_mpi_dp
for v in 1024 0 100000; do $M -np 2 build/exp/dp_$v $F --output "$OUT/dp_$v" > "$OUT/dp_$v.log" 2>&1; done
# the probe
$NV notes/experiments/2026-11-27-row-blocks/probe.cu -o build/exp/probe_rb -lcublas -ldl -lnccl $MPI
for r in 512 3000; do $M -np 2 build/exp/probe_rb $r; done

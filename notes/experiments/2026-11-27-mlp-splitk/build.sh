#!/usr/bin/env bash
# Builds bench/gemm (sm_90a, -O3) into build/exp/: gemm_old from the commit before the change (OLD,
# a git worktree path: the slices' sums added one load at a time), gemm_r with the sums' loads
# overlapped, and gemm_r_<blocks>_<steps> with other splits of K (HPDL__SPLITK_BLOCKS_PER_SM,
# HPDL__SPLITK_MIN_STEPS; the library's are 4 and 2).
#   OLD=/tmp/old notes/experiments/2026-11-27-mlp-splitk/build.sh
set -eu
OLD=${OLD:?a worktree of the commit before the change}
NV="nvcc -std=c++17 -I. -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN"
LIBS="-lcublas -lcublasLt -lcudnn -ldl -Xlinker -rpath=/usr/local/cuda/lib64"
mkdir -p build/exp
(cd "$OLD" && $NV bench/gemm.cu -o "$OLDPWD/build/exp/gemm_old" $LIBS) &
$NV bench/gemm.cu -o build/exp/gemm_r $LIBS &
wait
$NV -DHPDL__SPLITK_BLOCKS_PER_SM=1 -DHPDL__SPLITK_MIN_STEPS=8 bench/gemm.cu -o build/exp/gemm_r_1_8 $LIBS &
$NV -DHPDL__SPLITK_BLOCKS_PER_SM=2 -DHPDL__SPLITK_MIN_STEPS=4 bench/gemm.cu -o build/exp/gemm_r_2_4 $LIBS &
wait
strip build/exp/gemm_*
ls -la build/exp

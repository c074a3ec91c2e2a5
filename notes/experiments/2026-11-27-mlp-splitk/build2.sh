#!/usr/bin/env bash
# Second round: bench/gemm with f16/bf16 splitk shapes on the FMA kernel instead of mma.sync
# (HPDL__SPLITK_HALF_FMA bits: 1 narrow, 2 short, 4 square) and with more slices (8 blocks per SM;
# slices of at least one 32-deep step).   notes/experiments/2026-11-27-mlp-splitk/build2.sh
set -eu
NV="nvcc -std=c++17 -I. -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN"
LIBS="-lcublas -lcublasLt -lcudnn -ldl -Xlinker -rpath=/usr/local/cuda/lib64"
mkdir -p build/exp
b() { $NV "$@" $LIBS; }
b -DHPDL__SPLITK_HALF_FMA=1 bench/gemm.cu -o build/exp/gemm_fma1 &
b -DHPDL__SPLITK_HALF_FMA=3 bench/gemm.cu -o build/exp/gemm_fma3 &
wait
b -DHPDL__SPLITK_HALF_FMA=7 bench/gemm.cu -o build/exp/gemm_fma7 &
b -DHPDL__SPLITK_BLOCKS_PER_SM=8 bench/gemm.cu -o build/exp/gemm_r_8_2 &
wait
b -DHPDL__SPLITK_MIN_STEPS=1 bench/gemm.cu -o build/exp/gemm_r_4_1
strip build/exp/gemm_*
ls -la build/exp

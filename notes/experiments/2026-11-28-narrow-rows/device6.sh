#!/usr/bin/env bash
# gpu_gemm and gpu_mlp after the column sums moved into one helper (hpdl__colsum_finish).
B=build/h90
for t in gpu_gemm gpu_mlp; do timeout 150 $B/gpu/$t > $OUT/$t.log 2>&1; echo "$t rc $?"; grep -E "FAIL|passed" $OUT/$t.log | tail -3; done

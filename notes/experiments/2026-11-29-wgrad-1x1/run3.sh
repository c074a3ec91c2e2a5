#!/bin/bash
# One H200, after the thin kernel stops at K = 2048 and the wgmma rung runs
# large 1x1 backward-filters as one GEMM: the GEMM shapes old and new, the
# 1x1 backward-filters, gpu_gemm, gpu_conv's 16-bit cases, bench/conv f16 and
# bf16 in full. Everything under $OUT/r, packed in one tar.
set -u
cd build/carry6 && for f in *.gz; do gunzip -f "$f"; done; chmod +x *; cd ../..
B=build/carry6 R=$OUT/r
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for i in 1 2; do for v in old new; do echo "# $v $i"; $B/gemm_split_$v; done; done > $R/gemm_split.csv 2>&1
$B/wgrad_1x1 > $R/wgrad_1x1.csv 2>&1; cat $R/wgrad_1x1.csv
( time $B/gpu_gemm ) > $R/gpu_gemm.log 2>&1; tail -4 $R/gpu_gemm.log
for t in test_conv_f16 test_conv_bf16; do ( time $B/gpu_conv $t ) > $R/gpu_conv_$t.log 2>&1; tail -4 $R/gpu_conv_$t.log; done
for p in f16 bf16; do ( time $B/conv --precision $p --output $R/conv-$p ) > $R/conv_$p.log 2>&1; tail -4 $R/conv_$p.log; done
tar -C $OUT -czf $OUT/r.tgz r && rm -rf $R

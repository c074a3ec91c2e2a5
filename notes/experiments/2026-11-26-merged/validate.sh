#!/usr/bin/env bash
# The merged tree's GPU tests on one GPU: builds them (16 cores) and runs each with a timeout.
# Run from the repository root with $OUT set; logs in $OUT.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/summary.log
T="gpu_gemm gpu_conv gpu_fp8 gpu_quant gpu_cnn gpu_checks gpu_mlp gpu_optim gpu_vecadd gpu_matpow"
make features > /dev/null
make -j16 $(for t in $T; do echo build/gpu/$t; done) build/bench/conv > $O/build.log 2>&1 || echo "BUILD FAILED" >> $O/summary.log
echo "built at $((SECONDS-start)) s" >> $O/summary.log
for t in $T; do
    timeout 150 build/gpu/$t > $O/$t.log 2>&1; rc=$?
    echo "$t rc=$rc $(tail -1 $O/$t.log) at $((SECONDS-start)) s" >> $O/summary.log
done
grep -h -E "FAIL" $O/gpu_*.log | head -40 >> $O/summary.log
cd $O && tar czf tests.tgz gpu_*.log build.log && rm gpu_*.log build.log
cat $O/summary.log

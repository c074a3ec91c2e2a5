#!/usr/bin/env bash
# bench/conv, f16 and bf16, every rung against cuDNN in one run (the stem now double-buffered),
# then ncu's per-instruction view of the wgmma backward-filter on ResNet-50 conv4_x (f16).
# One H100/H200, $OUT set, from the repository root; about 7 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
make -j16 build/bench/conv > $O/build.log 2>&1 & p1=$!
nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo \
    notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
wait $p1 $p2
log built
for p in f16 bf16; do
    timeout 150 build/bench/conv --precision $p --output $O/conv_$p > $O/conv_$p.log 2>&1
    log "bench/conv $p rc=$?"; grep -E "geometric" $O/conv_$p.log | tee -a $O/summary.log
    grep -E "stem.*(cudnn|few-mma)" $O/conv_$p.log | tee -a $O/summary.log
done
timeout 120 ncu -k regex:wgmma_wgrad --set full --import-source yes -o /tmp/wg build/wgrad f16 "r50 conv4" once > $O/ncu_run.log 2>&1
log "ncu rc=$?"
ncu -i /tmp/wg.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/wgrad_sass.csv.gz
ncu -i /tmp/wg.ncu-rep --page details > $O/ncu_details.txt 2>&1
cd $O && tar czf conv_runs.tgz conv_f16 conv_bf16 conv_f16.log conv_bf16.log build.log build_wgrad.log ncu_run.log && rm -rf conv_f16 conv_bf16 conv_f16.log conv_bf16.log build.log build_wgrad.log ncu_run.log
log done

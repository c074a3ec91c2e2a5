#!/usr/bin/env bash
# The backward-filter's rounding in the kernel (the block completing a tile rounds it; no
# separate cast): wgrad.cu before (build/base, carried) and after in turns, bench/conv
# backward-filter f16/bf16 on the wgmma rung, gpu_conv's 16-bit tests. One H100, $OUT set; ~4 min.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo"
W=notes/experiments/2026-11-26-conv-wgrad/wgrad.cu
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV -I. $W -o build/wgrad_new -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
$NV -Ibuild/base -I. $W -o build/wgrad_base -lcudnn -lcuda >> $O/build_wgrad.log 2>&1 & p3=$!
wait $p2 $p3
log "wgrad built"
for r in 1 2; do for b in base new; do
  timeout 60 build/wgrad_$b f16 "r50" > $O/wgrad_${b}_$r.log 2>&1; log "wgrad $b run $r rc=$?"
  grep -E "ratio|geomean" $O/wgrad_${b}_$r.log | tee -a $O/summary.log
done; done
wait $p1
log "built: $(ls build/gpu/gpu_conv build/bench/conv 2>&1 | tr '\n' ' ')"
for p in f16 bf16; do
  timeout 60 build/bench/conv --precision $p --pass backward-filter --rung wgmma --output $O/conv_${p}_backward-filter > $O/conv_${p}_wgrad.log 2>&1
  log "bench/conv $p backward-filter rc=$?"; grep -E "geometric|r50_conv._(3x3|1x1).*wgmma" $O/conv_${p}_wgrad.log | tee -a $O/summary.log
done
for t in test_conv_f16 test_conv_bf16; do
  timeout 150 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; log "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"
  grep -E "^FAIL|expected" $O/gpu_conv_$t.log | head -5 | tee -a $O/summary.log
done
cd $O && tar czf runs.tgz conv_* gpu_conv_* wgrad_* build*.log 2>/dev/null && rm -rf conv_* gpu_conv_* wgrad_* build*.log
log done

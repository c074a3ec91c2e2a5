#!/usr/bin/env bash
# The producers' divisions out of the per-stage loop (backward-filter: a plan per tile and the
# box stepped; forward/backward-data: the chunk and tap counted): gpu_conv's 16-bit tests,
# wgrad.cu before/after in turns (the headers before the change in build/base, carried), then
# bench/conv backward-filter and forward in f16 and bf16. One H100, $OUT set; about 8 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
late() { [ $((SECONDS-start)) -gt ${1} ] && { log "skipped: $2 (time)"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo"
W=notes/experiments/2026-11-26-conv-wgrad/wgrad.cu
make -j16 build/gpu/gpu_conv build/bench/conv > $O/build.log 2>&1 & p1=$!
$NV -I. $W -o build/wgrad_new -lcudnn -lcuda > $O/build_wgrad.log 2>&1 & p2=$!
$NV -Ibuild/base -I. $W -o build/wgrad_base -lcudnn -lcuda >> $O/build_wgrad.log 2>&1 & p3=$!
wait $p1 $p2 $p3
log built
for t in test_conv_f16 test_conv_bf16; do
    timeout 120 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; log "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"
    grep -E "^FAIL|expected" $O/gpu_conv_$t.log | head -5 | tee -a $O/summary.log
done
for b in base new; do
    late 420 "wgrad $b" || { timeout 60 build/wgrad_$b f16 "r50 conv" > $O/wgrad_$b.log 2>&1; log "wgrad $b rc=$?"; grep -E "ratio|geomean" $O/wgrad_$b.log | tee -a $O/summary.log; }
done
for p in f16 bf16; do
    for pass in backward-filter forward; do
        late 520 "bench/conv $p $pass" && continue
        timeout 60 build/bench/conv --precision $p --pass $pass --rung wgmma --output $O/conv_${p}_$pass > $O/conv_${p}_$pass.log 2>&1
        log "bench/conv $p $pass rc=$?"; grep -E "geometric" $O/conv_${p}_$pass.log | tee -a $O/summary.log
    done
done
cd $O && tar czf runs.tgz conv_* gpu_conv_* wgrad_* build.log build_wgrad.log 2>/dev/null && rm -rf conv_* gpu_conv_* wgrad_* build.log build_wgrad.log
log done

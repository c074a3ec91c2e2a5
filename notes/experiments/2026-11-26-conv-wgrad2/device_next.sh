#!/usr/bin/env bash
# Not run yet. What the last changes left unmeasured: gpu_conv and gpu_cnn whole on the new
# kernels, ResNet-18's f16 epoch (bench/cnn) with the column widths chosen by rounds (its last two
# stages now on 128- and 64-wide tiles), and where conv5_x's backward-filter time goes (ncu's
# per-instruction view). One H100, $OUT set; about 9 minutes.
set -u
O=${OUT:?set OUT}; mkdir -p $O build
start=$SECONDS
log() { echo "[$((SECONDS-start)) s] $*" | tee -a $O/summary.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/summary.log
make features > /dev/null
NV="nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo -I."
make -j16 build/gpu/gpu_conv build/gpu/gpu_cnn build/bench/cnn > $O/build.log 2>&1 & p1=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1
timeout 120 ncu -k regex:wgmma_wgrad --set full --import-source yes -o /tmp/w5 build/wgrad f16 "r50 conv5" once > /dev/null 2>&1
ncu -i /tmp/w5.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/wgrad_conv5_sass.csv.gz
ncu -i /tmp/w5.ncu-rep --page details > $O/ncu_conv5_details.txt 2>&1
log "ncu conv5 done"
wait $p1
log "built: $(ls build/gpu/gpu_conv build/gpu/gpu_cnn build/bench/cnn 2>&1 | tr '\n' ' ')"
timeout 200 build/gpu/gpu_conv > $O/gpu_conv.log 2>&1; log "gpu_conv rc=$? $(tail -1 $O/gpu_conv.log)"
timeout 150 build/gpu/gpu_cnn > $O/gpu_cnn.log 2>&1; log "gpu_cnn rc=$? $(tail -1 $O/gpu_cnn.log)"
timeout 200 build/bench/cnn resnet18 --output $O/cnn > $O/cnn.log 2>&1; log "bench/cnn resnet18 rc=$?"

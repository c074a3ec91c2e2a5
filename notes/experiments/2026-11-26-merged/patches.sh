#!/usr/bin/env bash
# The two patches waiting for a GPU (few-mma double buffering, the int8 epilogue from the
# registers) measured against the tree they apply to, plus the FP8 GEMM test and ncu's
# per-instruction stall sampling of the wgmma backward-filter (ResNet-50 conv4_x, f16).
# Run from the repository root with $OUT set; one H100/H200; logs in $OUT.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make features > /dev/null
P=/tmp/patched; rm -rf $P; mkdir -p $P
tar cf - --exclude=./build --exclude=./build90 . | tar xf - -C $P
( cd $P && patch -s -p1 < notes/experiments/2026-11-26-conv-stem2/double_buffer.patch \
        && patch -s -p1 < notes/experiments/2026-11-26-int8-epi/epilogue.patch ) || echo "PATCH FAILED"
NV="nvcc -std=c++17 -I. -O3 -gencode arch=compute_90a,code=sm_90a -DHPDL_HAVE_CUDNN -lineinfo"
mkdir -p build $P/build
make -j16 build/gpu/gpu_fp8 build/bench/quantize > $O/build_base.log 2>&1 &
p1=$!
( cd $P && make -j16 build/gpu/gpu_quant build/bench/quantize ) > $O/build_patched.log 2>&1 &
p2=$!
$NV notes/experiments/2026-11-26-conv-wgrad/wgrad.cu -o build/wgrad -lcudnn -lcuda > $O/build_wgrad.log 2>&1 &
p3=$!
( cd $P && $NV notes/experiments/2026-11-26-conv-stem2/ab.cu -o build/stem2_ab -lcublas -lcublasLt -lcudnn -ldl ) > $O/build_ab.log 2>&1 &
p4=$!
wait $p1 $p2 $p3 $p4 # not a bare wait: it would wait for the tee above too
echo "built at $((SECONDS-start)) s"
timeout 60 build/gpu/gpu_fp8 > $O/gpu_fp8.log 2>&1; echo "gpu_fp8 rc=$? $(tail -1 $O/gpu_fp8.log)"
grep -E "FAIL|bound|wrong|expected" $O/gpu_fp8.log | head -12
echo "== few-mma double-buffered (patched) vs before, cuDNN"
timeout 120 $P/build/stem2_ab > $O/stem2_ab.log 2>&1; echo "ab rc=$?"; tail -30 $O/stem2_ab.log
echo "== int8 epilogue: gpu_quant patched"
( cd $P && timeout 120 build/gpu/gpu_quant ) > $O/gpu_quant_patched.log 2>&1; echo "gpu_quant rc=$? $(tail -1 $O/gpu_quant_patched.log)"
( cd $P && timeout 90 compute-sanitizer --tool memcheck build/gpu/gpu_quant test_conv ) 2>&1 | grep -E "ERROR SUMMARY|passed" 
for r in 1 2; do
  echo "== bench/quantize base (round $r)"; timeout 100 build/bench/quantize --output /tmp/qb 2>&1 | grep -iE "batch 256|resnet" | head -8
  echo "== bench/quantize patched (round $r)"; ( cd $P && timeout 100 build/bench/quantize --output /tmp/qp ) 2>&1 | grep -iE "batch 256|resnet" | head -8
done
echo "at $((SECONDS-start)) s"
echo "== ncu: wgmma backward-filter, conv4_x"
timeout 150 ncu -k regex:wgmma_wgrad --set full --import-source yes -o /tmp/wg build/wgrad f16 "r50 conv4" once > $O/ncu_run.log 2>&1
ncu -i /tmp/wg.ncu-rep --page source --csv --print-source sass > /tmp/wg_sass.csv 2>/dev/null
ncu -i /tmp/wg.ncu-rep --page details > $O/ncu_details.txt 2>&1
gzip -c /tmp/wg_sass.csv > $O/wg_sass.csv.gz
echo "all done at $((SECONDS-start)) s"

#!/usr/bin/env bash
# Host-built binaries (GPU_CC=90 NVOPT=-O3, carried): gpu_conv's f16/bf16 cases (the
# not-lined-up case added at 362e246), ResNet-18's convolutions int8 vs f16 vs cuDNN per
# layer, ncu of the int8 and f16 kernels on s1 and s2sc, bench/quantize's CNN rows.
set -u
O=${OUT:?}
export HPDL_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
exec > >(tee $O/summary.log) 2>&1
start=$SECONDS
at() { echo "== $1 ($((SECONDS-start)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
at "layers"; timeout 90 build/int8_vs_f16 256 2>&1 | tail -14
at "ncu s1, s2sc, s3b"
for l in s1 s2sc s3b; do
  timeout 80 ncu -k regex:hpdl --clock-control none --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    build/int8_vs_f16 256 $l > $O/ncu_$l.txt 2>&1; echo "ncu $l rc=$?"
done
grep -E "hpdl__|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|Stall|Block Size|Grid Size" $O/ncu_s1.txt | head -60
at "gpu_conv f16, bf16"
for t in test_conv_f16 test_conv_bf16; do timeout 120 build/gpu/gpu_conv $t > $O/gpu_conv_$t.log 2>&1; echo "gpu_conv $t rc=$? $(tail -1 $O/gpu_conv_$t.log)"; done
at "bench/quantize"; timeout 150 build/bench/quantize --max-size 512 --output /tmp/q > $O/bench_quantize.log 2>&1; grep -A4 'CNN inference' $O/bench_quantize.log
cd $O && tar czf ncu.tgz ncu_*.txt gpu_conv_*.log && rm -f ncu_*.txt gpu_conv_*.log
at "done"

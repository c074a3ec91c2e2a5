#!/usr/bin/env bash
# Where conv5_x's backward-filter time goes (its weakest layer, 0.63 of cuDNN): ncu's full set and
# per-instruction source view of our kernel, and the speed-of-light section of cuDNN's kernels on
# the same layer. build/wgrad_tall (wgrad.cu on f47dc1d's headers; the kernel unchanged since)
# carried. One H100, $OUT set; about 2 minutes.
set -u
O=${OUT:?set OUT}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/summary.log
timeout 200 ncu -k regex:wgmma_wgrad --set full --import-source yes -o /tmp/w5 build/wgrad_tall f16 "r50 conv5" once \
  > $O/ncu_ours.log 2>&1; echo "ncu ours rc=$?" | tee -a $O/summary.log
ncu -i /tmp/w5.ncu-rep --page details > $O/ncu_conv5_details.txt 2>&1
ncu -i /tmp/w5.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/wgrad_conv5_sass.csv.gz
timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --clock-control none build/wgrad_tall f16 "r50 conv5" once \
  > $O/ncu_all_kernels.txt 2>&1; echo "ncu all kernels rc=$?" | tee -a $O/summary.log
grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|L2 Hit|Compute \(SM\)" $O/ncu_all_kernels.txt | head -60 | tee -a $O/summary.log

#!/usr/bin/env bash
# Why the int8 3x3 convolutions take 3x the f16 kernel's time on the same k steps: ncu --set full
# of int8 and f16 s3b and s1 (the kernels of int8_vs_f16's one-call mode), stall reasons and SASS.
set -u
O=${OUT:?}
exec > >(tee $O/summary.log) 2>&1
for l in s3b s1; do
  timeout 200 ncu -k regex:hpdl__conv_wgmma --set full --import-source yes -o /tmp/p_$l build/int8_vs_f16 256 $l > /dev/null 2>&1
  echo "ncu $l rc=$?"
  ncu -i /tmp/p_$l.ncu-rep --page details > $O/details_$l.txt 2>&1
  ncu -i /tmp/p_$l.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/sass_$l.csv.gz
  grep -E "hpdl__conv_wgmma|Duration|Issued Warp|Warp Cycles Per Issued|Executed Instructions  |No Eligible|L1/TEX Hit|Bank" $O/details_$l.txt | head -24
done
cd $O && tar czf details.tgz details_*.txt && rm -f details_*.txt

#!/bin/bash
# One H200, after AUTO takes the f32 IM2COL route for the stems' 16-bit dx:
# stem_dgrad again, gpu_conv's 16-bit cases, bench/conv f16 and bf16 in full,
# paleo_gpu's layer table (its binary from 5e24e3f: the f32 paths it runs did
# not change). Everything under $OUT/r, packed in one tar.
set -u
cd build/carry4 && for f in *.gz; do gunzip -f "$f"; done; chmod +x *; cd ../..
B=build/carry4 R=$OUT/r
mkdir -p $R/h200
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
$B/stem_dgrad > $R/stem_dgrad.csv 2>&1; cat $R/stem_dgrad.csv
for t in test_conv_f16 test_conv_bf16; do ( time $B/gpu_conv $t ) > $R/gpu_conv_$t.log 2>&1; tail -4 $R/gpu_conv_$t.log; done
for p in f16 bf16; do ( time $B/conv --precision $p --output $R/conv-$p ) > $R/conv_$p.log 2>&1; tail -4 $R/conv_$p.log; done
HPDL_COMMIT=5e24e3f $B/paleo_gpu --output $R/h200 > $R/paleo.log 2>&1; echo "paleo rc=$?"
tar -C $OUT -czf $OUT/r.tgz r && rm -rf $R

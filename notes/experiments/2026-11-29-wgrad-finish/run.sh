#!/usr/bin/env bash
# One H200: the wgmma rung's backward-filter rounding each tile into dw as its
# last piece finishes (no cast kernel after it). gpu_conv's 16-bit cases,
# then bench/conv's backward-filter on the wgmma rung before (A, 1aaaf93's
# code) and after (B) in turns, f16 twice, bf16 once, then the f16 cases
# under memcheck. Binaries built on the host for sm_90a, carried gzipped in
# build/c8. Usage: COMMIT=... bash run.sh
set -u -o pipefail
C=build/c8; B=$C/x; mkdir -p $B $OUT/r
exec > >(tee "$OUT/r/device.log") 2>&1
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
for f in $C/*.gz; do gunzip -c $f > $B/$(basename $f .gz); chmod +x $B/$(basename $f .gz); done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for t in test_conv_f16 test_conv_bf16 test_layers_f16 test_layers_bf16; do
  step "gpu_conv $t"; timeout 150 $B/gpu_conv $t 2>&1 | tail -n 2
done
for run in f16:1 f16:2 bf16:1; do
  prec=${run%:*}; for v in A B; do
    d=$OUT/r/conv$v-$prec-${run#*:}; step "conv$v $prec"
    HPDL_COMMIT=$COMMIT timeout 120 $B/conv$v --precision $prec --pass backward-filter --rung wgmma --output $d > $d.log 2>&1
    echo "rc=$?" >> $d.log; grep "geomean" $d/conv.csv | head -n 2
  done
done
step "memcheck test_conv_f16"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 $CS --tool memcheck --error-exitcode 9 $B/gpu_conv test_conv_f16 2>&1 | tail -n 3
step done
tar czf /tmp/r.tgz -C $OUT r && rm -rf $OUT/r && mv /tmp/r.tgz $OUT/

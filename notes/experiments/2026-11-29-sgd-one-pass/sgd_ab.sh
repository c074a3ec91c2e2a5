#!/usr/bin/env bash
# One H200: the SGD kernels alone (sgd_probe), then bench/mlp before (A, at
# 1aaaf93) and after (B) the one-pass kernel in turns, three rounds, PyTorch
# left out (a python3 that says so); gpu_gemm and gpu_mlp where carried.
# Binaries built on the host for sm_90a, carried gzipped in $C (run 1:
# build/c2, B at 6b074d5, with gpu_gemm; run 2: build/c4, B with the shares
# aligned to 32 elements, with gpu_mlp).
set -u -o pipefail
C=${C:-build/c2}; B=$C/x; mkdir -p $B $OUT/r $B/nopy
exec > >(tee "$OUT/r/device.log") 2>&1
start=$SECONDS; step() { echo "== $1 ($((SECONDS - start)) s)"; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
for f in $C/*.gz; do gunzip -c $f > $B/$(basename $f .gz); chmod +x $B/$(basename $f .gz); done
printf '#!/bin/sh\necho "PyTorch left out of this run"\n' > $B/nopy/python3; chmod +x $B/nopy/python3
step "sgd_probe"; timeout 60 $B/sgd_probe | tee $OUT/r/sgd_probe.csv
for round in 1 2 3; do for v in A B; do
  d=$OUT/mlp/$v$round; mkdir -p $d; step "mlp$v round $round"
  PATH=$PWD/$B/nopy:$PATH timeout 150 $B/mlp$v --output $d > $d/mlp.log 2>&1; echo "rc=$?" >> $d/mlp.log
done; done
for t in gpu_gemm gpu_mlp; do
  [ -x $B/$t ] || continue
  step "$t"; timeout 300 $B/$t > $OUT/r/$t.log 2>&1; echo "rc=$?" >> $OUT/r/$t.log; tail -n 2 $OUT/r/$t.log
done
step done
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
